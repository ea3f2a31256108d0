import type OpenAI from "openai";
import { z } from "zod";
import { AbridgeError, ErrorCode, messageOf } from "../model/errors.js";
import type { Logger } from "../log/logger.js";
import { silentLogger } from "../log/logger.js";
import type { RawTool } from "../model/types.js";
import type { PromptTemplate } from "./loadPrompt.js";
import type { SummarizeInput, SummarizeOutcome, Summarizer } from "./types.js";
import { isObject } from "../model/json.js";

/** Options of {@link OpenAiSummarizer}. */
export interface OpenAiSummarizerOptions {
  /** Model name, e.g. `gpt-4o-mini`. */
  model: string;
  /** OpenAI-compatible endpoint (`http://127.0.0.1:11434/v1`); the OpenAI API when absent. */
  baseUrl?: string;
  /** API key; local endpoints accept any placeholder. */
  apiKey: string;
  /** Timeout of one request. */
  timeoutMs: number;
  /** Tools of one server per request (config `batch_size`). */
  batchSize: number;
  /** The system prompt and its id. */
  prompt: PromptTemplate;
  /** Sampling temperature; left to the endpoint's default when absent (some models reject any other). */
  temperature?: number;
  /** Longest tool description sent; the rest is cut (default 12,000 characters). */
  maxDescriptionChars?: number;
  logger?: Logger;
}

/** What the model must answer; params default to none. */
const replySchema = z.object({
  tools: z.array(
    z.object({
      name: z.string().min(1),
      summary: z.string(),
      params: z
        .record(z.string(), z.string())
        .nullish()
        .transform((p) => p ?? {}),
    }),
  ),
});

/** Longest property description sent to the model. */
const MAX_PARAM_DESCRIPTION_CHARS = 1_000;

/** A property's type as one short string: `string`, `array<string>`, `string|null`, `object`. */
function typeOf(schema: Record<string, unknown>, depth = 0): string | undefined {
  const type = schema["type"];
  if (typeof type === "string") {
    if (type === "array" && isObject(schema["items"]) && depth < 3) {
      const inner = typeOf(schema["items"], depth + 1);
      return inner ? `array<${inner}>` : "array";
    }
    return type;
  }
  if (Array.isArray(type)) return type.filter((t) => typeof t === "string").join("|");
  for (const key of ["anyOf", "oneOf"]) {
    const variants = schema[key];
    if (Array.isArray(variants) && depth < 3) {
      const types = variants.filter(isObject).map((v) => typeOf(v, depth + 1) ?? "any");
      return [...new Set(types)].join("|");
    }
  }
  if (typeof schema["$ref"] === "string" || isObject(schema["properties"])) return "object";
  if (Array.isArray(schema["enum"])) return "enum";
  return undefined;
}

/**
 * The compact view of an input schema sent to the model: each top-level parameter with type,
 * required flag, enum values and description. Nested structure is left out: the model only
 * describes top-level parameters, and sending whole schemas would cost more than it saves.
 */
export function compactInputView(tool: RawTool): Record<string, Record<string, unknown>> {
  const schema: unknown = tool.inputSchema;
  if (!isObject(schema) || !isObject(schema["properties"])) return {};
  const required = new Set(Array.isArray(schema["required"]) ? schema["required"].filter((r): r is string => typeof r === "string") : []);
  const view: Record<string, Record<string, unknown>> = {};
  for (const [name, property] of Object.entries(schema["properties"])) {
    const entry: Record<string, unknown> = {};
    if (isObject(property)) {
      const type = typeOf(property);
      if (type) entry["type"] = type;
      if (Array.isArray(property["enum"])) entry["enum"] = property["enum"].slice(0, 30);
      if (typeof property["description"] === "string" && property["description"].trim()) {
        entry["description"] = property["description"].trim().slice(0, MAX_PARAM_DESCRIPTION_CHARS);
      }
    }
    entry["required"] = required.has(name);
    view[name] = entry;
  }
  return view;
}

/** Milliseconds to wait from `retry-after-ms`, or `retry-after` (seconds or an HTTP date). */
export function parseRetryAfter(headers: Headers | undefined, nowMs: number = Date.now()): number | undefined {
  if (!headers) return undefined;
  const ms = headers.get("retry-after-ms");
  if (ms !== null && ms.trim() !== "" && Number.isFinite(Number(ms)) && Number(ms) >= 0) return Math.ceil(Number(ms));
  const value = headers.get("retry-after");
  if (value === null || value.trim() === "") return undefined;
  if (/^\s*\d+(\.\d+)?\s*$/.test(value)) return Math.ceil(Number(value) * 1000);
  const date = Date.parse(value);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - nowMs);
}

type OpenAiModule = typeof import("openai");

/**
 * The `openai` package, loaded with the first summarizer request: a bridge on the default offline
 * summarizer, or one whose cache already holds every summary, never loads it (it costs about
 * 14 MiB of memory and 75 ms of start-up).
 */
let openAiModule: OpenAiModule | undefined;

async function loadOpenAi(): Promise<OpenAiModule> {
  openAiModule ??= await import("openai");
  return openAiModule;
}

/**
 * Maps a failure of the `openai` client to an {@link AbridgeError}: 429 is rate limiting (retryable,
 * with `details.retryAfterMs`), 5xx, 408, timeouts and connection errors are retryable
 * `SUMMARIZER_FAILED`, other 4xx are not; an abort by the caller is `CANCELLED`.
 */
export function mapOpenAiError(err: unknown, nowMs: number = Date.now()): AbridgeError {
  if (err instanceof AbridgeError) return err;
  // Until the package is loaded no error can come from it.
  const sdk = openAiModule;
  if (sdk === undefined) return new AbridgeError(ErrorCode.SUMMARIZER_FAILED, `summarizer request failed: ${messageOf(err)}`, { cause: err });
  const { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } = sdk;
  if (err instanceof APIUserAbortError) {
    return new AbridgeError(ErrorCode.CANCELLED, "summarizer request aborted", { cause: err });
  }
  if (err instanceof APIConnectionTimeoutError) {
    return new AbridgeError(ErrorCode.SUMMARIZER_FAILED, "summarizer request timed out", {
      cause: err,
      retryable: true,
      details: { timeout: true },
    });
  }
  if (err instanceof APIConnectionError) {
    return new AbridgeError(ErrorCode.SUMMARIZER_FAILED, `cannot reach the summarizer endpoint: ${err.message}`, {
      cause: err,
      retryable: true,
    });
  }
  if (err instanceof APIError && typeof err.status === "number") {
    const status = err.status;
    if (status === 429) {
      const retryAfterMs = parseRetryAfter(err.headers, nowMs);
      return new AbridgeError(ErrorCode.SUMMARIZER_RATE_LIMITED, `summarizer endpoint rate limited the request (429)`, {
        cause: err,
        retryable: true,
        details: retryAfterMs === undefined ? { status } : { status, retryAfterMs },
      });
    }
    // 408 is the server's own timeout: as retryable as a client-side one.
    const retryable = status >= 500 || status === 408;
    return new AbridgeError(ErrorCode.SUMMARIZER_FAILED, `summarizer endpoint answered ${status}: ${err.message}`, {
      cause: err,
      retryable,
      details: { status },
    });
  }
  const message = messageOf(err);
  return new AbridgeError(ErrorCode.SUMMARIZER_FAILED, `summarizer request failed: ${message}`, { cause: err });
}

/**
 * Writes summaries with an OpenAI-compatible chat completions endpoint (OpenAI, Ollama, vLLM,
 * LM Studio...). Several tools of one server go in one request; the reply must be a JSON object
 * and is validated with zod. The client never retries by itself (`maxRetries: 0`): the queue does,
 * so that backoff, rate limits and the spend cap are counted in one place.
 */
export class OpenAiSummarizer implements Summarizer {
  readonly id: string;
  readonly promptId: string;
  readonly maxBatch: number;
  private client: Promise<OpenAI> | undefined;
  private readonly options: OpenAiSummarizerOptions;
  private readonly logger: Logger;

  constructor(options: OpenAiSummarizerOptions) {
    this.options = options;
    this.id = `openai:${options.model}`;
    this.promptId = options.prompt.promptId;
    this.maxBatch = Math.max(1, options.batchSize);
    this.logger = options.logger ?? silentLogger;
  }

  private openClient(): Promise<OpenAI> {
    const { apiKey, timeoutMs, baseUrl } = this.options;
    this.client ??= loadOpenAi().then(
      (sdk) => new sdk.default({ apiKey, timeout: timeoutMs, maxRetries: 0, ...(baseUrl === undefined ? {} : { baseURL: baseUrl }) }),
    );
    return this.client;
  }

  /** The user message of one request (exported shape: see `prompts/summarize-tool.md`). */
  buildRequest(batch: SummarizeInput[]): { server: string; tools: Array<Record<string, unknown>> } {
    const maxChars = this.options.maxDescriptionChars ?? 12_000;
    return {
      server: batch[0]?.server ?? "",
      tools: batch.map(({ tool }) => ({
        name: tool.name,
        ...(tool.title ? { title: tool.title } : {}),
        description: (tool.description ?? "").trim().slice(0, maxChars),
        input: compactInputView(tool),
      })),
    };
  }

  /**
   * {@inheritDoc Summarizer.summarize}
   * A failed request throws an {@link AbridgeError} (see {@link mapOpenAiError}); a reply that is
   * not valid JSON of the expected shape, or that leaves tools out, fails those tools with a
   * non-retryable `SUMMARIZER_FAILED`.
   */
  async summarize(batch: SummarizeInput[], options?: { signal?: AbortSignal }): Promise<Map<string, SummarizeOutcome>> {
    const out = new Map<string, SummarizeOutcome>();
    if (batch.length === 0) return out;
    const servers = new Set(batch.map((input) => input.server));
    if (servers.size > 1) {
      throw new AbridgeError(ErrorCode.INPUT_INVALID, `a batch must hold tools of one server, got ${[...servers].join(", ")}`);
    }
    const request = this.buildRequest(batch);
    let content: unknown;
    try {
      const client = await this.openClient();
      const completion = await client.chat.completions.create(
        {
          model: this.options.model,
          messages: [
            { role: "system", content: this.options.prompt.text },
            { role: "user", content: JSON.stringify(request) },
          ],
          response_format: { type: "json_object" },
          ...(this.options.temperature === undefined ? {} : { temperature: this.options.temperature }),
        },
        options?.signal ? { signal: options.signal } : undefined,
      );
      // A misbehaving endpoint may send a body that is not a completion at all.
      content = (completion as { choices?: Array<{ message?: { content?: unknown } }> }).choices?.[0]?.message?.content;
    } catch (err) {
      throw mapOpenAiError(err);
    }

    const failAll = (message: string, cause?: unknown): Map<string, SummarizeOutcome> => {
      this.logger.warn("summarizer reply rejected", { summarizer: this.id, reason: message });
      for (const input of batch) {
        out.set(input.key, {
          ok: false,
          error: new AbridgeError(ErrorCode.SUMMARIZER_FAILED, message, cause === undefined ? {} : { cause }),
        });
      }
      return out;
    };

    if (typeof content !== "string" || content.trim() === "") return failAll("summarizer reply has no message content");
    let json: unknown;
    try {
      // Some local models wrap JSON in a code fence despite response_format.
      json = JSON.parse(content.trim().replace(/^```(?:json)?\s*([\s\S]*?)\s*```$/i, "$1"));
    } catch (err) {
      return failAll(`summarizer reply is not JSON: ${content.slice(0, 80)}`, err);
    }
    const parsed = replySchema.safeParse(json);
    if (!parsed.success) {
      return failAll(`summarizer reply does not match {"tools":[{"name","summary","params"}]}: ${parsed.error.message.slice(0, 200)}`);
    }
    const byName = new Map(parsed.data.tools.map((t) => [t.name, t]));
    for (const input of batch) {
      const reply = byName.get(input.tool.name);
      if (!reply) {
        out.set(input.key, {
          ok: false,
          error: new AbridgeError(ErrorCode.SUMMARIZER_FAILED, `summarizer reply has no entry for tool ${input.tool.name}`),
        });
        continue;
      }
      out.set(input.key, { ok: true, value: { summary: reply.summary.trim(), params: reply.params } });
    }
    return out;
  }
}
