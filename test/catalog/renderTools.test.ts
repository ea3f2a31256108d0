import { Ajv, type ValidateFunction } from "ajv";
import { Ajv2020 } from "ajv/dist/2020.js";
import { describe, expect, it } from "vitest";
import { GET_SCHEMA, CALL_TOOL, MAX_INDEXED_SERVERS, SEARCH_TOOLS, isMetaTool } from "../../src/catalog/metaTools.js";
import { listedToolTokens, renderTools, tokenReport, toOpenAiFunctions } from "../../src/catalog/renderTools.js";
import type { CatalogTool, ListedTool } from "../../src/catalog/types.js";
import { catalogTool, corpusCatalog, loadCorpus, withFormTokens } from "./corpusTools.js";
import { admitted } from "../helpers/admitted.js";
import { isObject } from "../../src/model/json.js";

const servers = loadCorpus();
const catalog = corpusCatalog(servers);
const MODES = ["full", "summary", "compact", "lazy"] as const;

type Json = Record<string, unknown>;

function byName(listed: ListedTool[]): Map<string, ListedTool> {
  return new Map(listed.map((t) => [t.name, t]));
}

/** A value of roughly the right kind for `schema` (valid or not: only agreement between validators matters). */
function sample(schema: unknown, root: unknown, depth: number, fill: "required" | "all"): unknown {
  if (!isObject(schema) || depth > 6) return "x";
  if (typeof schema.$ref === "string" && schema.$ref.startsWith("#/")) {
    let node: unknown = root;
    for (const part of schema.$ref.slice(2).split("/")) node = isObject(node) ? node[part] : undefined;
    return sample(node, root, depth + 1, fill);
  }
  if ("const" in schema) return schema.const;
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0];
  const branches = (schema.anyOf ?? schema.oneOf) as unknown[] | undefined;
  if (Array.isArray(branches) && branches.length > 0) return sample(branches[0], root, depth + 1, fill);
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== "null") : schema.type;
  switch (type) {
    case "number":
    case "integer":
      return 1;
    case "boolean":
      return true;
    case "array":
      return schema.items === undefined ? [] : [sample(schema.items, root, depth + 1, fill)];
    case "null":
      return null;
    case "object":
      return objectSample(schema, root, depth, fill);
    default:
      return isObject(schema.properties) ? objectSample(schema, root, depth, fill) : "x";
  }
}

function objectSample(schema: Json, root: unknown, depth: number, fill: "required" | "all"): Json {
  const props = isObject(schema.properties) ? schema.properties : {};
  const required = Array.isArray(schema.required) ? (schema.required as string[]) : [];
  const names = fill === "all" ? Object.keys(props) : required;
  return Object.fromEntries(names.map((n) => [n, sample(props[n], root, depth + 1, fill)]));
}

function instancesFor(schema: Json): unknown[] {
  const required = sample(schema, schema, 0, "required");
  const all = sample(schema, schema, 0, "all");
  const wrong = isObject(required) ? Object.fromEntries(Object.keys(required).map((k) => [k, 12345])) : { x: 1 };
  const extra = isObject(required) ? { ...required, zz_unknown: 1 } : { zz_unknown: 1 };
  // Tool arguments are always objects (MCP), which is why summary mode may add `type: "object"`
  // to a root that lacks it (gitlab's): only object instances are compared.
  return [{}, required, all, wrong, extra].filter(isObject);
}

function engineFor(schema: Json): Ajv | Ajv2020 {
  const options = { strict: false, allErrors: true, logger: false as const, validateFormats: false };
  return typeof schema.$schema === "string" && schema.$schema.includes("2020-12") ? new Ajv2020(options) : new Ajv(options);
}

function tryCompile(ajv: Ajv | Ajv2020, schema: Json): ValidateFunction | undefined {
  try {
    return ajv.compile(schema);
  } catch {
    return undefined;
  }
}

describe("renderTools over the corpus", () => {
  it("renders every corpus file in every mode without throwing", () => {
    for (const server of servers) {
      const tools = server.tools.map((t) => catalogTool(server.server, t));
      for (const mode of MODES) {
        const listed = renderTools(tools, mode);
        expect(listed.length, `${server.file} ${mode}`).toBeGreaterThan(0);
        for (const t of listed) expect(t.inputSchema.type, `${server.file} ${mode} ${t.name}`).toBe(mode === "full" ? t.inputSchema.type : "object");
      }
    }
  });

  it("full keeps every key of every tool byte for byte except the name", () => {
    const listed = byName(renderTools(catalog, "full"));
    for (const tool of catalog) {
      const rendered = listed.get(tool.name);
      expect(rendered, tool.name).toBeDefined();
      expect(JSON.stringify({ ...rendered, name: tool.tool.name })).toBe(JSON.stringify(tool.tool));
    }
  });

  it("summary schemas accept and reject exactly the instances the originals do", () => {
    const listed = byName(renderTools(catalog, "summary"));
    let compared = 0;
    for (const tool of catalog) {
      const original = tool.tool.inputSchema;
      const rendered = listed.get(tool.name)?.inputSchema;
      expect(rendered, tool.name).toBeDefined();
      if (rendered === undefined) continue;
      expect(rendered.$schema).toBeUndefined();
      const validateOriginal = tryCompile(engineFor(original), original);
      if (validateOriginal === undefined) continue;
      const validateRendered = engineFor(original).compile(rendered);
      for (const instance of instancesFor(original)) {
        expect(validateRendered(instance), `${tool.name} ${JSON.stringify(instance).slice(0, 200)}`).toBe(validateOriginal(instance));
        compared++;
      }
    }
    expect(compared).toBeGreaterThan(catalog.length * 4);
  }, 300_000);

  it("summary uses the summary, keeps title, annotations and outputSchema, and uses param summaries", () => {
    const github = catalog.find((t) => t.name === "github_create_issue");
    const fs = catalog.find((t) => t.name === "filesystem_read_text_file");
    if (github === undefined || fs === undefined) throw new Error("corpus tools missing");
    const withParams: CatalogTool = withFormTokens({ ...github, summary: { summary: "Open an issue.", params: { owner: "Repo owner" } } });
    const [rendered] = renderTools([withParams], "summary");
    expect(rendered?.description).toBe("Open an issue.");
    expect((rendered?.inputSchema.properties as Json).owner).toEqual({ type: "string", description: "Repo owner" });
    const [fsRendered] = renderTools([fs], "summary");
    expect(fsRendered?.title).toBe(fs.tool.title);
    expect(fsRendered?.annotations).toEqual(fs.tool.annotations);
    expect(fsRendered?.outputSchema).toBeDefined();
    const { summary: _summary, ...unsummarized } = github;
    expect(renderTools([unsummarized], "summary")[0]?.description).toBe(github.tool.description);
  });

  it("compact keeps every required name, every enum of up to 10 values and the hints", () => {
    const listed = byName(renderTools(catalog, "compact"));
    const withNames = byName(renderTools(catalog, "compact", { compactSchema: "names" }));
    const summaryForms = byName(renderTools(catalog, "summary"));
    for (const tool of catalog) {
      const rendered = listed.get(tool.name);
      if (rendered === undefined) throw new Error(`${tool.name} not rendered`);
      const hints = tool.tool.annotations;
      if (hints?.destructiveHint === true) expect(rendered.annotations?.destructiveHint, tool.name).toBe(true);
      if (hints?.readOnlyHint === true) expect(rendered.annotations?.readOnlyHint, tool.name).toBe(true);
      // A tool whose compact form would be larger is listed in its summary form (checked below).
      if (JSON.stringify(rendered) === JSON.stringify(summaryForms.get(tool.name))) continue;
      expect(rendered.inputSchema, tool.name).toEqual({ type: "object" });
      const schema = tool.tool.inputSchema;
      const required = Array.isArray(schema.required) ? (schema.required as string[]) : [];
      const line = (rendered.description ?? "").split("\n").pop() ?? "";
      for (const name of required) expect(line, tool.name).toMatch(new RegExp(`[(, ]"?${name}"?: `));
      for (const [name, prop] of Object.entries(isObject(schema.properties) ? schema.properties : {})) {
        if (isObject(prop) && Array.isArray(prop.enum) && prop.enum.length <= 10 && JSON.stringify(prop.enum).length < 50) {
          for (const value of prop.enum.filter((v) => v !== null)) expect(line, `${tool.name}.${name}`).toContain(String(value));
        }
      }
      if (hints?.destructiveHint !== true) expect(rendered.annotations?.destructiveHint, tool.name).toBeUndefined();
      if (JSON.stringify(withNames.get(tool.name)) === JSON.stringify(summaryForms.get(tool.name))) continue;
      const names = withNames.get(tool.name)?.inputSchema;
      const props = (names?.properties ?? {}) as Record<string, Json>;
      for (const name of required) {
        expect(names?.required, tool.name).toContain(name);
        expect(props[name], `${tool.name}.${name}`).toEqual({});
      }
    }
    expect(listed.get(GET_SCHEMA)?.inputSchema.required).toEqual(["tool"]);
  });

  it("per tool, compact is never larger than summary, nor summary than full, in every schema choice", () => {
    const full = byName(renderTools(catalog, "full"));
    const summary = byName(renderTools(catalog, "summary"));
    for (const compactSchema of ["none", "names", "types"] as const) {
      const compact = byName(renderTools(catalog, "compact", { compactSchema }));
      for (const tool of catalog) {
        const [f, s, c] = [full, summary, compact].map((list) => listedToolTokens(list.get(tool.name) as ListedTool));
        expect(s, `${tool.name} summary ${s} > full ${f}`).toBeLessThanOrEqual(f as number);
        expect(c, `${tool.name} ${compactSchema} compact ${c} > summary ${s}`).toBeLessThanOrEqual(s as number);
      }
    }
  });

  it("compact describes a tool as summary plus a typed parameter line", () => {
    const tool = catalog.find((t) => t.name === "github_list_issues");
    if (tool === undefined) throw new Error("github_list_issues missing");
    const [rendered] = renderTools([tool], "compact");
    expect(rendered?.description).toBe(
      `${tool.summary?.summary.replace(/\.$/, "")}\n(owner: string, repo: string, direction?: asc|desc, labels?: string[], page?: number, per_page?: number, since?: string, sort?: created|updated|comments, state?: open|closed|all)`,
    );
    expect(rendered?.inputSchema).toEqual({ type: "object" });
    const [named] = renderTools([tool], "compact", { compactSchema: "names" });
    expect(named?.inputSchema).toEqual({
      type: "object",
      properties: { owner: {}, repo: {}, direction: {}, labels: {}, page: {}, per_page: {}, since: {}, sort: {}, state: {} },
      required: ["owner", "repo"],
    });
    // A names-and-types schema with a line beside it costs as much as this tool's summary form,
    // which is listed instead.
    expect(renderTools([tool], "compact", { compactSchema: "types" })[0]).toEqual(renderTools([tool], "summary")[0]);
  });

  it("shows short scalar defaults in the parameter line", () => {
    const tool: CatalogTool = {
      name: "s_t",
      server: "s",
      uri: "mcp://s/t",
      key: "s:t:0",
      summary: { summary: "Lists records of a table with a long enough summary to be worth a line.", params: {} },
      tool: admitted({
        name: "t",
        description: "Lists records of a table with a long enough summary to be worth a line. ".repeat(4),
        inputSchema: {
          type: "object",
          properties: {
            table: { type: "string", description: "Table name" },
            limit: { type: "integer", default: 30, description: "How many records to return at most" },
            order: { type: "string", enum: ["asc", "desc"], default: "asc", description: "Sort order" },
            filter: { type: "object", default: { a: 1 }, description: "Filter object" },
          },
          required: ["table"],
        },
      }),
    };
    expect(renderTools([tool], "compact")[0]?.description).toBe(
      "Lists records of a table with a long enough summary to be worth a line\n(table: string, limit?: integer = 30, order?: asc|desc = asc, filter?: object)",
    );
  });

  it("lazy lists only the meta-tools, with one line per server in the index", () => {
    const listed = renderTools(catalog, "lazy");
    expect(listed.map((t) => t.name)).toEqual([SEARCH_TOOLS, GET_SCHEMA, CALL_TOOL]);
    const lines = (listed[0]?.description ?? "").split("\n").slice(1);
    const servers = [...new Set(catalog.map((t) => t.server))];
    expect(lines).toHaveLength(Math.min(servers.length, MAX_INDEXED_SERVERS) + (servers.length > MAX_INDEXED_SERVERS ? 1 : 0));
    expect(lines).toContain("github (26 tools): pull, request, issue, file");
    expect(listed.every((t) => isMetaTool(t.name))).toBe(true);
    expect(isMetaTool("github_create_issue")).toBe(false);
  });

  it("lazy costs about the same for 50 tools or 5,000", () => {
    // Synthetic catalogs built from the corpus: the same tools under many server names.
    const grown = (copies: number): CatalogTool[] =>
      Array.from({ length: copies }, (_, i) => catalog.map((t) => ({ ...t, server: `${t.server}${i}`, name: `${t.server}${i}_${t.tool.name}` }))).flat();
    const small = catalog.slice(0, 50);
    const large = grown(14); // 5,096 tools over 336 servers
    expect(large.length).toBeGreaterThan(5_000);
    const tokens = (tools: CatalogTool[]): number => tokenReport(tools).lazy.openAiTokens;
    expect(tokens(large)).toBeLessThan(tokens(catalog) * 1.5);
    expect(tokens(large)).toBeLessThan(700);
    expect(tokens(small)).toBeGreaterThan(100);
    const index = renderTools(large, "lazy")[0]?.description ?? "";
    expect(index).toMatch(/\nand 316 more servers \(\d+ tools\)$/);
  }, 300_000);

  it("orders by server then tool, whatever the input order", () => {
    const shuffled = [...catalog].reverse();
    const rotated = [...catalog.slice(100), ...catalog.slice(0, 100)];
    for (const mode of MODES) {
      const a = JSON.stringify(renderTools(catalog, mode));
      expect(JSON.stringify(renderTools(shuffled, mode))).toBe(a);
      expect(JSON.stringify(renderTools(rotated, mode))).toBe(a);
    }
    const names = renderTools(catalog, "full").map((t) => t.name);
    expect(names[0]).toBe("brave-search_brave_local_search");
    const servers = renderTools(catalog, "compact")
      .slice(0, -1)
      .map((t) => t.name.split("_")[0]);
    expect(servers).toEqual([...servers].sort());
  });

  it("reports tokens per mode in both forms, lazy and summary within their targets", () => {
    const report = tokenReport(catalog);
    expect(report.full.ratioOfFull).toBe(1);
    expect(report.full.listed).toBe(catalog.length);
    expect(report.compact.listed).toBe(catalog.length + 1);
    expect(report.lazy.ratioOfFull).toBeLessThanOrEqual(0.02);
    expect(report.summary.ratioOfFull).toBeLessThanOrEqual(0.45);
    expect(report.compact.openAiTokens).toBeLessThan(report.summary.openAiTokens);
    for (const mode of MODES) expect(report[mode].mcpTokens).toBeGreaterThan(0);
    const fns = toOpenAiFunctions(renderTools(catalog.slice(0, 2), "compact"));
    expect(fns[0]).toEqual({ type: "function", function: { name: expect.any(String), description: expect.any(String), parameters: expect.any(Object) } });
  });
});
