/**
 * A tool whose schema nests thousands of levels (through `properties`, `anyOf` or `items`) used to
 * overflow the stack in every walk of the schema (canonical JSON for the hash first), failing
 * `serve`, `tools` and `call` for every server. That one tool is now quarantined where tools enter:
 * not listed, a logged reason, its server's other tools and every other server still served.
 */
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { schemaShape } from "../../src/catalog/compactSchema.js";
import { ToolCatalog } from "../../src/catalog/toolCatalog.js";
import { canonicalJson, createToolHasher } from "../../src/catalog/toolHash.js";
import { JsonlStore } from "../../src/cache/jsonlStore.js";
import { normalizeTool } from "../../src/upstream/normalizeTool.js";
import { MAX_SCHEMA_DEPTH, schemaTooDeep } from "../../src/upstream/schemaDepth.js";
import { createLogger } from "../../src/log/logger.js";
import { fixtureServerToml, runAbridge } from "../helpers/cliHarness.js";
import { fixtureToml, resultText, startBridge } from "../policy/bridgeHarness.js";
import { admitExposed, admitTool } from "../../src/upstream/admitTool.js";
import { useTempDir } from "../helpers/tempDir.js";

function deepSchema(levels: number, shape: "properties" | "anyOf" | "items"): Record<string, unknown> {
  let schema: Record<string, unknown> = { type: "string" };
  for (let i = 0; i < levels; i++) {
    if (shape === "anyOf") schema = { anyOf: [schema, { type: "null" }] };
    else if (shape === "items") schema = { type: "array", items: schema };
    else schema = { type: "object", properties: { next: schema } };
  }
  return { type: "object", properties: { root: schema } };
}

describe("deep schemas", () => {
  const temp = useTempDir();
  for (const shape of ["properties", "anyOf", "items"] as const) {
    it(`a ${shape} schema 3,000 levels deep: that tool is quarantined, the rest is served`, async () => {
      const toml =
        'mode = "compact"\n' +
        fixtureToml("deep", "deepSchemaServer.ts", ["--depth", "3000", "--shape", shape]) +
        fixtureToml("echo", "echoServer.ts", ["--tools", "1"]);
      const { bridge, lines } = await startBridge(toml);
      expect(bridge.servers().map((s) => [s.name, s.state])).toEqual([
        ["deep", "ready"],
        ["echo", "ready"],
      ]);
      const names = bridge.list().map((t) => t.name);
      expect(names).not.toContain("deep_deep");
      expect(names).toEqual(expect.arrayContaining(["deep_echo", "deep_ping", "echo_echo", "echo_add"]));
      for (const mode of ["full", "summary", "compact", "lazy"] as const) {
        const listed = bridge.list(mode).map((t) => t.name);
        expect(listed).not.toContain("deep_deep");
        expect(listed.length).toBeGreaterThan(0);
      }
      const quarantined = lines.filter((l) => l.includes("quarantined"));
      expect(quarantined.length).toBe(1);
      expect(quarantined[0]).toContain("server=deep tool=deep");
      expect(quarantined[0]).toContain(`deeper than ${MAX_SCHEMA_DEPTH} levels`);
      expect(resultText(await bridge.callTool("deep_echo", { text: "still here" }))).toBe("still here");
      expect(resultText(await bridge.callTool("echo_echo", { text: "fine" }))).toBe("fine");
      await expect(bridge.callTool("deep_deep", {})).rejects.toMatchObject({ code: "TOOL_NOT_FOUND" });
    });
  }

  it("abridge render names a deep tool in a recorded list as invalid input", async () => {
    // Written as text: JSON.stringify cannot serialize it either.
    let schema = '{"type":"string"}';
    for (let i = 0; i < 4000; i++) schema = `{"type":"array","items":${schema}}`;
    await writeFile(path.join(temp.path, "tools.json"), `{"tools":[{"name":"ok","inputSchema":{"type":"object"}},{"name":"deep","inputSchema":${schema}}]}`);
    const r = await runAbridge(["render", "--input", "tools.json", "--cache-dir", "cache"], { cwd: temp.path });
    expect(r.stderr).not.toContain("Maximum call stack");
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(`tools[1]: its definition nests deeper than ${MAX_SCHEMA_DEPTH} levels`);
    expect(r.stderr).toContain("INPUT_INVALID");
  });

  it("abridge tools and abridge call work beside a deep server", async () => {
    const config = path.join(temp.path, "abridge.toml");
    await writeFile(
      config,
      'cache_dir = "cache"\nmode = "compact"\n' +
        fixtureServerToml("deep", "deepSchemaServer.ts", ["--depth", "5000", "--shape", "anyOf"]) +
        fixtureServerToml("echo", "echoServer.ts", ["--tools", "1"]),
    );
    const tools = await runAbridge(["tools", "--config", config, "--json"], { cwd: temp.path });
    expect(tools.stderr).not.toContain("Maximum call stack");
    expect(tools.code, tools.stderr).toBe(0);
    const names = (JSON.parse(tools.stdout) as { tools: { name: string }[] }).tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(["deep_ping", "echo_echo"]));
    expect(names).not.toContain("deep_deep");
    const call = await runAbridge(["call", "deep", "ping", "--config", config], { cwd: temp.path });
    expect(call.code, call.stderr).toBe(0);
    expect(call.stdout).toContain("pong");
  });

  it("every schema walk is bounded for a library caller that hands in a deep tool", async () => {
    const tool = { name: "deep", inputSchema: deepSchema(20_000, "anyOf") };
    expect(schemaTooDeep(tool)).toMatch(/deeper than/);
    expect(() => canonicalJson(tool)).toThrow(expect.objectContaining({ code: "INPUT_INVALID" }));
    expect(normalizeTool(tool)).toBe(tool);
    const lines: string[] = [];
    const logger = createLogger({ level: "debug", sink: (line) => lines.push(line) });
    const catalog = new ToolCatalog({ store: await JsonlStore.open({ file: path.join(temp.path, "s.jsonl") }), hasher: await createToolHasher(), logger });
    const ok = { name: "ok", inputSchema: deepSchema(5, "items") };
    // Admission quarantines the deep tool before the catalog, which takes admitted tools only.
    catalog.setTools(
      admitExposed(
        [
          { server: "lib", name: "lib_deep", uri: "lib/deep", tool },
          { server: "lib", name: "lib_ok", uri: "lib/ok", tool: ok },
        ],
        logger,
      ),
    );
    expect(catalog.list("full").map((t) => t.name)).toEqual(["lib_ok"]);
    expect(lines.some((l) => l.includes("quarantined"))).toBe(true);
    // The walks a library caller can reach directly stop at the limit instead of overflowing.
    expect(schemaShape(deepSchema(20_000, "anyOf")).types).toEqual(["object"]);
    // The renderers take admitted tools only, and a deep tool is never admitted.
    expect(admitTool(tool)).toMatchObject({ ok: false, problem: { reason: "tooDeep", code: "INPUT_INVALID" } });
  });
});
