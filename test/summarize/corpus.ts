import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { RawTool } from "../../src/model/types.js";
import { UNIT_TEST_SERVERS } from "../helpers/corpusServers.js";

/** The corpus vendored in the repository, `bench/corpus`. */
export const CORPUS_DIR = path.resolve(fileURLToPath(new URL("../../", import.meta.url)), "bench/corpus");

/** One tool of the corpus with the server it came from. */
export interface CorpusTool {
  server: string;
  tool: RawTool;
}

/** Every tool of the `servers/*.json` of {@link UNIT_TEST_SERVERS}; throws a clear error when the corpus is missing. */
export function loadCorpusTools(): CorpusTool[] {
  const dir = path.join(CORPUS_DIR, "servers");
  if (!existsSync(dir)) {
    throw new Error(
      `The tool corpus is missing: expected ${dir} (bench/corpus/servers in the repository). These tests read the recorded tools/list answers there.`,
    );
  }
  const out: CorpusTool[] = [];
  for (const file of readdirSync(dir)
    .filter((f) => f.endsWith(".json"))
    .sort()) {
    const data = JSON.parse(readFileSync(path.join(dir, file), "utf8")) as { server: string; tools: RawTool[] };
    if (!UNIT_TEST_SERVERS.has(data.server)) continue;
    for (const tool of data.tools) out.push({ server: data.server, tool });
  }
  if (out.length === 0) throw new Error(`The tool corpus at ${dir} holds no tools`);
  return out;
}

/** The corpus tool `server:name`; throws when it is not there. */
export function corpusTool(tools: CorpusTool[], server: string, name: string): RawTool {
  const found = tools.find((t) => t.server === server && t.tool.name === name);
  if (!found) throw new Error(`corpus has no tool ${server}:${name}`);
  return found.tool;
}
