import { existsSync, readdirSync, readFileSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { listedToolTokens } from "../../src/catalog/renderTools.js";
import { assignNames } from "../../src/model/names.js";
import { runAbridge, tempDir } from "../helpers/cliHarness.js";
import { UNIT_TEST_SERVERS } from "../helpers/corpusServers.js";
import { useTempDir } from "../helpers/tempDir.js";

const CORPUS = path.resolve("bench/corpus/servers");

function corpusFiles(): string[] {
  if (!existsSync(CORPUS)) throw new Error(`the corpus is missing: expected ${CORPUS} (bench/corpus/servers in the repository)`);
  return readdirSync(CORPUS)
    .filter((f) => f.endsWith(".json") && UNIT_TEST_SERVERS.has(f.slice(0, -".json".length)))
    .sort();
}

describe("abridge render", () => {
  const temp = useTempDir({ scope: "all" });

  it("renders every corpus file in every mode as a valid tools/list result", async () => {
    const files = corpusFiles();
    expect(files).toHaveLength(24);
    for (const file of files) {
      const recorded = JSON.parse(readFileSync(path.join(CORPUS, file), "utf8")) as { server: string; tools: { name: string }[] };
      for (const mode of ["full", "summary", "compact", "lazy"]) {
        const r = await runAbridge(["render", "--input", path.join(CORPUS, file), "--mode", mode, "--json", "--cache-dir", temp.path], { cwd: temp.path });
        expect(r.code, `${file} ${mode}: ${r.stderr}`).toBe(0);
        const listed = JSON.parse(r.stdout) as { tools: { name: string; description?: string; inputSchema: unknown }[] };
        const names = listed.tools.map((t) => t.name);
        if (mode === "lazy") {
          expect(names).toEqual(["search_tools", "get_schema", "call_tool"]);
          expect(listed.tools[0]!.description).toContain(`\n${recorded.server} (${recorded.tools.length} tool`);
        } else {
          const expected = recorded.tools.map((t) => `${recorded.server}_${t.name}`.replace(/[^A-Za-z0-9_-]/g, "_"));
          for (const name of expected) expect(names.some((n) => n === name || n.startsWith(name.slice(0, 50)))).toBe(true);
          if (mode === "compact") expect(names.at(-1)).toBe("get_schema");
        }
        for (const tool of listed.tools) {
          expect(tool.name).toMatch(/^[A-Za-z0-9_-]{1,64}$/);
          expect(typeof tool.inputSchema).toBe("object");
        }
      }
    }
  }, 180_000);

  it("reads a bare array from stdin and prints token counts", async () => {
    const tools = [
      {
        name: "say",
        description: "Says a thing out loud to everyone in the room. Use this tool to speak.",
        inputSchema: { type: "object", properties: { text: { type: "string", description: "What to say" } }, required: ["text"] },
      },
    ];
    const r = await runAbridge(["render", "--server", "voice", "--tokens", "--cache-dir", temp.path], { cwd: temp.path, stdin: JSON.stringify(tools) });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("voice_say");
    expect(r.stdout).toMatch(/tokens before -> after \(compact\): \d+ -> \d+/);
  });

  it("needs --server for stdin without a server field", async () => {
    const r = await runAbridge(["render", "--cache-dir", temp.path], { cwd: temp.path, stdin: "[]" });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("--server NAME");
  });

  it.each([
    ["invalid JSON", "{nope", "<stdin>: expected JSON, got invalid JSON"],
    ["no tools array", '{"x": 1}', "<stdin>: expected a tools array"],
    ["a tool without a name", '[{"inputSchema": {}}]', "<stdin>: tools[0].name: expected a non-empty string"],
    ["a tool without a schema", '[{"name": "a"}]', "<stdin>: tools[0].inputSchema: expected an object"],
  ])("rejects %s with exit 2", async (_name, input, message) => {
    const r = await runAbridge(["render", "--server", "s", "--cache-dir", temp.path], { cwd: temp.path, stdin: input });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(message);
    expect(r.stderr).toContain("INPUT_INVALID");
  });

  it("shows mode auto under a budget: lazy plus pinned and most-called tools", async () => {
    const { dir: own, cleanup: done } = await tempDir();
    try {
      await writeFile(path.join(own, "abridge.toml"), 'mode = "auto"\npin = ["github_get_*"]\n');
      const cache = path.join(own, "cache");
      await mkdir(cache, { recursive: true });
      await writeFile(path.join(cache, "calls.json"), JSON.stringify({ version: 1, counts: { "github:create_issue": 12, "github:fork_repository": 1 } }));
      const input = path.join(CORPUS, "github.json");
      const args = ["render", "--input", input, "--config", path.join(own, "abridge.toml"), "--cache-dir", cache];
      const r = await runAbridge([...args, "--budget", "1200"], { cwd: own });
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toMatch(/^auto: lazy \+ \d+ tools, [\d,]+ of 1,200 tokens\n/);
      const json = await runAbridge([...args, "--budget", "1200", "--json"], { cwd: own });
      expect(json.stderr).not.toContain("auto:");
      const names = (JSON.parse(json.stdout) as { tools: { name: string }[] }).tools.map((t) => t.name);
      expect(names.slice(0, 3)).toEqual(["search_tools", "get_schema", "call_tool"]);
      expect(names).toContain("github_get_issue");
      expect(names).toContain("github_create_issue");
      // A budget every view fits: full, and the same without the flag once the config says so.
      const roomy = await runAbridge([...args, "--budget", "100000"], { cwd: own });
      expect(roomy.stdout).toMatch(/^auto: full, [\d,]+ of 100,000 tokens\n/);
      const bad = await runAbridge([...args, "--budget", "lots"], { cwd: own });
      expect(bad.code).toBe(2);
      expect(bad.stderr).toContain('--budget: expected a positive integer, got "lots"');
    } finally {
      await done();
    }
  }, 60_000);
  it("caches for each tool the tokens summary mode serves it at, and full mode before", async () => {
    const { dir: own, cleanup: done } = await tempDir();
    try {
      // notion ships unused $defs and firecrawl nested prose and examples: summary mode drops them.
      for (const file of ["github.json", "notion.json", "firecrawl.json", "everything.json"]) {
        const input = path.join(CORPUS, file);
        const recorded = JSON.parse(readFileSync(input, "utf8")) as { server: string; tools: { name: string }[] };
        const listedIn = async (mode: string): Promise<Map<string, object>> => {
          const r = await runAbridge(["render", "--input", input, "--mode", mode, "--json", "--cache-dir", own], { cwd: own });
          expect(r.code, r.stderr).toBe(0);
          const tools = (JSON.parse(r.stdout) as { tools: { name: string }[] }).tools;
          return new Map(tools.map((t) => [t.name, t]));
        };
        const summary = await listedIn("summary");
        const full = await listedIn("full");
        const entries = readFileSync(path.join(own, "summaries.jsonl"), "utf8")
          .split("\n")
          .filter((line) => line !== "")
          .map((line) => JSON.parse(line) as { server: string; tool: string; tokensBefore: number; tokensAfter: number })
          .filter((e) => e.server === recorded.server);
        expect(entries).toHaveLength(recorded.tools.length);
        const names = assignNames(
          recorded.tools.map((t) => ({ server: recorded.server, tool: t.name, prefix: true })),
          "_",
        );
        for (const entry of entries) {
          const name = names.find((n) => n.tool === entry.tool)!.name;
          const served = summary.get(name);
          expect(served, `${file}: ${name} listed`).toBeDefined();
          expect({ tool: name, tokensAfter: entry.tokensAfter }).toEqual({ tool: name, tokensAfter: listedToolTokens(served as never) });
          expect({ tool: name, tokensBefore: entry.tokensBefore }).toEqual({ tool: name, tokensBefore: listedToolTokens(full.get(name) as never) });
        }
      }
    } finally {
      await done();
    }
  }, 120_000);
});
