import path from "node:path";
import { fileURLToPath } from "node:url";
import type { SummaryConfig } from "../config/schema.js";
import { AbridgeError, ErrorCode } from "../model/errors.js";
import type { Logger } from "../log/logger.js";
import { silentLogger } from "../log/logger.js";
import { ExtractiveSummarizer } from "./extractiveSummarizer.js";
import { loadPrompt } from "./loadPrompt.js";
import { OpenAiSummarizer } from "./openAiSummarizer.js";
import type { Summarizer } from "./types.js";

/** File name of the summarizer prompt inside the prompts directory. */
export const SUMMARIZE_PROMPT_FILE = "summarize-tool.md";

/**
 * Key sent to an endpoint that needs none (Ollama, vLLM, LM Studio): the `openai` client refuses
 * to start without one.
 */
export const PLACEHOLDER_API_KEY = "abridge-no-key";

/**
 * The package's `prompts/` directory. Two levels up from this file both in `src/summarize/` and in
 * `dist/summarize/`, and `prompts` ships in the package (`files` in package.json).
 */
export function defaultPromptsDir(): string {
  return fileURLToPath(new URL("../../prompts/", import.meta.url));
}

/** Dependencies of {@link createSummarizer}. */
export interface CreateSummarizerOptions {
  /** Environment to read the API key from (`api_key_env`); pass `process.env` from the CLI. */
  env: Record<string, string | undefined>;
  logger?: Logger;
  /** Where `summarize-tool.md` lives (default {@link defaultPromptsDir}). */
  promptsDir?: string;
}

/**
 * Builds the summarizer the `[summary]` config asks for. `openai` needs the key in the variable
 * named by `api_key_env`, except against a `base_url` (a local endpoint), where a placeholder is
 * sent when it is unset. Throws `CONFIG_ENV_MISSING` or `CONFIG_INVALID` (unreadable prompt).
 */
export function createSummarizer(config: SummaryConfig, options: CreateSummarizerOptions): Summarizer {
  const logger = options.logger ?? silentLogger;
  if (config.summarizer === "extractive") return new ExtractiveSummarizer({ wordBudget: config.word_budget });

  const key = options.env[config.api_key_env];
  let apiKey: string;
  if (key !== undefined && key.trim() !== "") {
    apiKey = key;
  } else if (config.base_url !== undefined) {
    logger.debug("no API key set; sending a placeholder to the local endpoint", {
      env: config.api_key_env,
      baseUrl: config.base_url,
    });
    apiKey = PLACEHOLDER_API_KEY;
  } else {
    throw new AbridgeError(
      ErrorCode.CONFIG_ENV_MISSING,
      `summary.summarizer = "openai" needs an API key in the environment variable ${config.api_key_env} (or set summary.base_url for a local endpoint)`,
      { details: { env: config.api_key_env } },
    );
  }
  const prompt = loadPrompt(path.join(options.promptsDir ?? defaultPromptsDir(), SUMMARIZE_PROMPT_FILE));
  return new OpenAiSummarizer({
    model: config.model,
    apiKey,
    timeoutMs: config.timeout_ms,
    batchSize: config.batch_size,
    prompt,
    logger: logger.child({ summarizer: `openai:${config.model}` }),
    ...(config.base_url === undefined ? {} : { baseUrl: config.base_url }),
  });
}
