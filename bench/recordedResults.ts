/**
 * The recorded tool results of bench/corpus/results/*.jsonl (written by bench/recordResults.ts),
 * read by the result-shaping benchmark and the round-trip test.
 */
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { REPO_ROOT } from "./corpus.js";
import { messageOf } from "../src/model/errors.js";

export const RESULTS_DIR = path.join(REPO_ROOT, "bench", "corpus", "results");

/** One recorded call: the server and tool, its arguments, the result as the server sent it. */
export interface RecordedCall {
  server: string;
  tool: string;
  arguments: Record<string, unknown>;
  result: Record<string, unknown>;
}

/** Every recorded call, server by server in file-name order, calls in the order made. */
export function loadRecordedResults(dir = RESULTS_DIR): RecordedCall[] {
  const calls: RecordedCall[] = [];
  for (const file of readdirSync(dir)
    .filter((f) => f.endsWith(".jsonl"))
    .sort()) {
    const lines = readFileSync(path.join(dir, file), "utf8").split("\n");
    lines.forEach((line, i) => {
      if (line.trim() === "") return;
      try {
        calls.push(JSON.parse(line) as RecordedCall);
      } catch (err) {
        throw new Error(`${file}:${i + 1}: not a JSON line (${messageOf(err)})`);
      }
    });
  }
  return calls;
}
