import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { runAbridge, writeConfig } from "../helpers/cliHarness.js";
import { useTempDir } from "../helpers/tempDir.js";

const CORPUS = path.resolve("bench/corpus/servers");

describe("the whole corpus as recorded servers", () => {
  const temp = useTempDir({ scope: "all" });
  let config: string;
  const files = readdirSync(CORPUS)
    .filter((f) => f.endsWith(".json"))
    .sort();
  const recorded = files.map((f) => JSON.parse(readFileSync(path.join(CORPUS, f), "utf8")) as { server: string; tools: { name: string }[] });
  beforeAll(async () => {
    config = await writeConfig(
      temp.path,
      `cache_dir = "cache"\n${recorded.map((r, i) => `[servers.${r.server}]\nrecorded = ${JSON.stringify(path.join(CORPUS, files[i]!))}\n`).join("")}`,
    );
  });

  it("serves every corpus file: each server ready with the tools it recorded", async () => {
    expect(files.length).toBeGreaterThanOrEqual(100);
    const r = await runAbridge(["servers", "--json", "--config", config], { cwd: temp.path });
    expect(r.code, r.stderr).toBe(0);
    const statuses = JSON.parse(r.stdout) as { name: string; transport: string; state: string; toolCount: number }[];
    expect(statuses).toHaveLength(files.length);
    const byName = new Map(statuses.map((s) => [s.name, s]));
    for (const file of recorded) {
      expect(byName.get(file.server), file.server).toMatchObject({ transport: "recorded", state: "ready", toolCount: file.tools.length });
    }
    expect(statuses.reduce((sum, s) => sum + s.toolCount, 0)).toBeGreaterThanOrEqual(2_000);
  }, 300_000);

  it("searches the whole catalog from the terminal", async () => {
    const r = await runAbridge(["search", "open a pull request", "--limit", "5", "--json", "--config", config], { cwd: temp.path });
    expect(r.code, r.stderr).toBe(0);
    const results = JSON.parse(r.stdout) as { server: string; tool: string }[];
    expect(results).toHaveLength(5);
    const known = new Set(recorded.flatMap((f) => f.tools.map((t) => `${f.server}:${t.name}`)));
    for (const hit of results) expect(known.has(`${hit.server}:${hit.tool}`), `${hit.server}:${hit.tool}`).toBe(true);
  }, 300_000);
});
