import { describe, expect, it } from "vitest";
import { admitExposed, admitTool, withoutMembers, type Admission, type AdmittedTool } from "../../src/upstream/admitTool.js";
import { MAX_SCHEMA_DEPTH } from "../../src/upstream/schemaDepth.js";
import { ToolCatalog } from "../../src/catalog/toolCatalog.js";
import { CatalogMemo } from "../../src/catalog/catalogMemo.js";
import { createToolHasher } from "../../src/catalog/toolHash.js";
import { createLogger } from "../../src/log/logger.js";
import type { JsonObject } from "../../src/model/types.js";
import { parseRecordedList } from "../../src/upstream/recorded/recordedList.js";
import { parseManifest, renderManifestProblem } from "../../src/upstream/jsonrpc/jsonRpcManifests.js";
import { messageOf } from "../../src/model/errors.js";

/** An input schema nested `levels` objects deep. */
function deepSchema(levels: number): JsonObject {
  let schema: JsonObject = { type: "string" };
  for (let i = 0; i < levels; i++) schema = { type: "object", properties: { next: schema } };
  return schema;
}

function refused(admission: Admission): Exclude<Admission, { ok: true }>["problem"] {
  if (admission.ok) throw new Error(`expected a refusal, got ${JSON.stringify(admission.tool)}`);
  return admission.problem;
}

describe("admitTool: the one rule for a tool entering abridge", () => {
  it("refuses a value that is not an object", () => {
    for (const [value, kind] of [
      [[], "array"],
      ["tool", "string"],
      [3, "number"],
      [null, "object"],
    ] as const) {
      expect(refused(admitTool(value))).toEqual({ reason: "notObject", code: "INPUT_INVALID", field: "", message: `expected an object, got ${kind}` });
    }
  });

  it("refuses a tool nested past the depth bound before normalizing it, naming the tool", () => {
    const problem = refused(admitTool({ name: "deep", description: null, inputSchema: deepSchema(MAX_SCHEMA_DEPTH) }));
    expect(problem).toEqual({
      reason: "tooDeep",
      code: "INPUT_INVALID",
      field: "",
      message: `its definition nests deeper than ${MAX_SCHEMA_DEPTH} levels`,
      name: "deep",
    });
  });

  it("refuses a tool without a string name, after nulls are dropped", () => {
    const problem = refused(admitTool({ name: null, inputSchema: { type: "object" } }));
    expect(problem).toMatchObject({ reason: "noName", code: "INPUT_INVALID", field: "name", message: "expected a string, got nothing" });
    expect(problem.normalized).toEqual({ inputSchema: { type: "object" } });
    expect(refused(admitTool({ name: 7, inputSchema: {} })).message).toBe("expected a string, got 7");
  });

  it("refuses a tool without an object inputSchema, naming the tool", () => {
    expect(refused(admitTool({ name: "t", inputSchema: null }))).toEqual({
      reason: "noInputSchema",
      code: "INPUT_INVALID",
      field: "inputSchema",
      message: "expected an object, got nothing",
      name: "t",
      normalized: { name: "t" },
    });
    expect(refused(admitTool({ name: "t", inputSchema: [1] })).message).toBe("expected an object, got [1]");
  });

  it("admits a tool with its nulls dropped, and the same object again by identity", () => {
    const admission = admitTool({ name: "t", title: null, inputSchema: { type: "object", properties: null }, annotations: { readOnlyHint: null } });
    if (!admission.ok) throw new Error(admission.problem.message);
    expect(admission.tool).toEqual({ name: "t", inputSchema: { type: "object" }, annotations: {} });
    const again = admitTool(admission.tool);
    expect(again.ok && again.tool).toBe(admission.tool);
  });

  it("keeps a tool admitted when a member other than name and inputSchema is taken away", () => {
    const admission = admitTool({ name: "t", inputSchema: {}, mcpExpose: true });
    if (!admission.ok) throw new Error(admission.problem.message);
    expect(withoutMembers(admission.tool, "mcpExpose", "name")).toEqual({ name: "t", inputSchema: {} });
  });

  it("admits a server's exposed tools, leaving a refused one out with a warning", () => {
    const lines: string[] = [];
    const logger = createLogger({ level: "warn", json: true, sink: (line) => lines.push(line) });
    const exposed = admitExposed(
      [
        { server: "s", name: "s_ok", uri: "mcp://s/ok", tool: { name: "ok", inputSchema: {} } },
        { server: "s", name: "s_deep", uri: "mcp://s/deep", tool: { name: "deep", inputSchema: deepSchema(MAX_SCHEMA_DEPTH) } },
      ],
      logger,
    );
    expect(exposed.map((t) => t.name)).toEqual(["s_ok"]);
    expect(lines.join("\n")).toMatch(/tool quarantined.*"server":"s".*"tool":"deep".*nests deeper/);
  });

  it("is required by the catalog and the hasher: a raw tool does not compile there", async () => {
    const hasher = await createToolHasher();
    const catalog = new ToolCatalog({ store: { get: () => undefined }, hasher, memo: new CatalogMemo() });
    const raw = { name: "t", inputSchema: { type: "object" } };
    // @ts-expect-error a tool reaches the catalog only through admitTool
    catalog.setTools([{ server: "s", name: "s_t", uri: "mcp://s/t", tool: raw }], { queue: false });
    // @ts-expect-error a tool reaches the hasher only through admitTool
    hasher.hash(raw);
    const admitted: AdmittedTool = (admitTool(raw) as { tool: AdmittedTool }).tool;
    expect(hasher.hash(admitted)).toMatch(/^[0-9a-f]{16}$/);
    catalog.close();
  });
});

describe("the entry points apply admitTool and word its refusals as they did", () => {
  const deep = { name: "deep", inputSchema: deepSchema(MAX_SCHEMA_DEPTH) };

  it("a recorded list names every bad tool by index, adding its own rules (a non-empty, unique name)", () => {
    const text = JSON.stringify({
      tools: [
        [],
        null,
        { name: "" },
        { name: 5, inputSchema: {} },
        { name: "a", inputSchema: null },
        deep,
        { name: "b", inputSchema: {} },
        { name: "b", inputSchema: {} },
      ],
    });
    let message = "";
    try {
      parseRecordedList(text, "r.json");
    } catch (err) {
      expect(err).toMatchObject({ code: "INPUT_INVALID" });
      message = messageOf(err);
    }
    expect(message.split("\n")).toEqual([
      "r.json: invalid tool list",
      "r.json: tools[0]: expected an object, got array",
      "r.json: tools[1]: expected an object, got object",
      'r.json: tools[2].name: expected a non-empty string, got ""',
      "r.json: tools[3].name: expected a non-empty string, got 5",
      "r.json: tools[4].inputSchema: expected an object, got nothing",
      `r.json: tools[5]: its definition nests deeper than ${MAX_SCHEMA_DEPTH} levels`,
      'r.json: tools[7].name: "b" appears twice',
    ]);
  });

  it("a recorded list's tools come out admitted, nulls dropped", () => {
    const { tools } = parseRecordedList(JSON.stringify([{ name: "t", title: null, inputSchema: { type: "object", properties: null } }]), "r.json");
    expect(tools).toEqual([{ name: "t", inputSchema: { type: "object" } }]);
    // Admitted by identity where it goes next (the bridge, the summarizer's token count): no second walk.
    const again = admitTool(tools[0]);
    expect(again.ok && again.tool).toBe(tools[0]);
  });

  it("a manifest reports a deep or misshapen tool by field and serves the rest without mcpExpose", () => {
    const text = JSON.stringify({
      id: "m",
      tools: [deep, { name: null, inputSchema: {} }, { name: "x", title: null, inputSchema: { type: "object" }, mcpExpose: true }],
      implementation: { methods: { deep: "d", x: "x.run" } },
    });
    const parsed = parseManifest(text, "/m.json");
    expect(parsed.problems.map(renderManifestProblem)).toEqual([
      `/m.json: tools[0]: its definition nests deeper than ${MAX_SCHEMA_DEPTH} levels`,
      "/m.json: tools[1].name: expected a non-empty string, got nothing",
    ]);
    expect(parsed.tools.map((t) => t.tool)).toEqual([{ name: "x", inputSchema: { type: "object" } }]);
    const again = admitTool(parsed.tools[0]?.tool);
    expect(again.ok && again.tool).toBe(parsed.tools[0]?.tool);
  });
});
