import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { MODES } from "../../src/config/schema.js";
import { fixtureServerToml, runAbridge, waitForNoMarkedPids, writeConfig } from "../helpers/cliHarness.js";
import { serveOverStdio, type ServeSession } from "../helpers/serveHarness.js";
import { useTempDir } from "../helpers/tempDir.js";

const RECORDED = fileURLToPath(new URL("../fixtures/nullTools.json", import.meta.url));

type Text = { type: string; text: string };
type Listed = { name: string; description?: string; inputSchema: unknown; annotations?: Record<string, unknown> };

/** JSON paths of every null in `value` but `default: null`, a data value. */
function nullPaths(value: unknown, at = "$"): string[] {
  if (value === null) return at.endsWith(".default") ? [] : [at];
  if (Array.isArray(value)) return value.flatMap((v, i) => nullPaths(v, `${at}[${i}]`));
  if (typeof value === "object") return Object.entries(value as Record<string, unknown>).flatMap(([k, v]) => nullPaths(v, `${at}.${k}`));
  return [];
}

describe("tools with null members", () => {
  const temp = useTempDir({ marker: "nulls" });
  let config: string;
  let session: ServeSession | undefined;
  beforeEach(async () => {
    config = await writeConfig(temp.path, `cache_dir = "cache"\n${fixtureServerToml("nulls", "nullFieldsServer.ts", [temp.marker])}`);
  });
  afterEach(async () => {
    await session?.close();
    session = undefined;
    expect(await waitForNoMarkedPids(temp.marker)).toEqual([]);
  });

  for (const mode of MODES) {
    it(`abridge render --mode ${mode} of a recorded list with nulls`, async () => {
      const r = await runAbridge(["render", "--input", RECORDED, "--mode", mode, "--json", "--cache-dir", path.join(temp.path, "cache")], { cwd: temp.path });
      expect(r.stderr).toBe("");
      expect(r.code).toBe(0);
      const { tools } = JSON.parse(r.stdout) as { tools: Listed[] };
      expect(nullPaths(tools)).toEqual([]);
      if (mode === "compact") {
        const byName = new Map(tools.map((t) => [t.name, t]));
        expect(byName.get("nulls_ping")?.annotations).toEqual({ readOnlyHint: true });
        expect(byName.get("nulls_lookup")?.annotations).toBeUndefined();
        expect(byName.get("nulls_lookup")?.description).toMatch(/\(word: string, lang\?: string\)$/);
        expect(byName.get("nulls_save")?.description).toMatch(/\(path: string, mode\?: \S+, tags\?: \S+\)$/);
      }
    }, 30_000);
  }

  for (const mode of MODES) {
    it(`abridge serve --mode ${mode}: an SDK client lists and calls the tools`, async () => {
      session = await serveOverStdio(config, ["--mode", mode]);
      // The SDK client validates the list: a null annotations or outputSchema would reject it.
      const { tools } = await session.client.listTools();
      expect(nullPaths(tools)).toEqual([]);
      const call = async (name: string, args: Record<string, unknown>): Promise<{ isError?: boolean; content: Text[] }> =>
        mode === "lazy"
          ? ((await session!.client.callTool({ name: "call_tool", arguments: { tool: name, arguments: args } })) as never)
          : ((await session!.client.callTool({ name, arguments: args })) as never);
      const looked = await call("nulls_lookup", { word: "abridge" });
      expect(looked.isError).toBeFalsy();
      expect(looked.content[0]?.text).toBe("definition of abridge");
      // `items: null` and `additionalProperties: null` are absent: the call validates and goes through.
      const saved = await call("nulls_save", { path: "notes.txt", tags: ["a", 1] });
      expect(saved.content[0]?.text).toBe("saved");
      if (mode === "compact" || mode === "lazy") {
        // Validation against the full schema works (`properties: null` on ping did not break it).
        const wrong = await call("nulls_lookup", {});
        expect(wrong.isError).toBe(true);
        expect(wrong.content[0]?.text).toContain("word");
        const schema = (await session.client.callTool({ name: "get_schema", arguments: { tool: "nulls_ping" } })) as { content: Text[] };
        expect(nullPaths(JSON.parse(schema.content[0]?.text ?? "null"))).toEqual([]);
      }
    }, 60_000);
  }

  it("abridge serve --read-only: a tool with null annotations is hidden, not a crash", async () => {
    session = await serveOverStdio(config, ["--mode", "full", "--read-only"]);
    const { tools } = await session.client.listTools();
    expect(tools.map((t) => t.name)).toEqual(["nulls_ping"]);
  }, 60_000);
});
