import { appendFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import type { CacheEntry } from "../../src/cache/cacheEntry.js";
import { cacheKey } from "../../src/cache/cacheEntry.js";
import { createLogger } from "../../src/log/logger.js";
import type { Logger } from "../../src/log/logger.js";
import { loadPrompt } from "../../src/summarize/loadPrompt.js";
import type { PromptTemplate } from "../../src/summarize/loadPrompt.js";
import type { SummarySink } from "../../src/summarize/summarizeQueue.js";
import type { SummarizeInput } from "../../src/summarize/types.js";
import type { CorpusTool } from "./corpus.js";

/** The repository's own prompt file. */
export function repoPrompt(): PromptTemplate {
  return loadPrompt(fileURLToPath(new URL("../../prompts/summarize-tool.md", import.meta.url)));
}

/** A sink that keeps entries in memory. */
export class ArraySink implements SummarySink {
  readonly entries: CacheEntry[] = [];
  async append(entry: CacheEntry): Promise<void> {
    this.entries.push(entry);
  }
}

/** A sink that appends JSON lines to a real file (what the JSONL store does, minus compaction). */
export class JsonlFileSink implements SummarySink {
  constructor(readonly file: string) {}
  async append(entry: CacheEntry): Promise<void> {
    await appendFile(this.file, `${JSON.stringify(entry)}\n`, "utf8");
  }
}

let counter = 0;

/** Queue inputs for corpus tools, each with a fresh 16-hex hash. */
export function inputsOf(tools: CorpusTool[]): SummarizeInput[] {
  return tools.map(({ server, tool }) => {
    counter++;
    const hash = counter.toString(16).padStart(16, "0");
    return { key: cacheKey(server, tool.name, hash), server, tool };
  });
}

/** A JSON logger whose lines are kept for inspection. */
export function captureLogger(): { logger: Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const logger = createLogger({
    level: "debug",
    json: true,
    sink: (line) => lines.push(JSON.parse(line) as Record<string, unknown>),
  });
  return { logger, lines };
}
