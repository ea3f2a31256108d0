import { mkdtemp, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { CacheEntry } from "../../src/cache/cacheEntry.js";
import { cacheEntrySchema } from "../../src/cache/cacheEntry.js";
import { summarySchema } from "../../src/config/schema.js";
import { AbridgeError, ErrorCode } from "../../src/model/errors.js";
import { ExtractiveSummarizer } from "../../src/summarize/extractiveSummarizer.js";
import { OpenAiSummarizer } from "../../src/summarize/openAiSummarizer.js";
import { RateLimiter } from "../../src/summarize/rateLimiter.js";
import { SummarizeQueue, fallbackCause, queueLimitsFromConfig } from "../../src/summarize/summarizeQueue.js";
import type { SummarizeQueueOptions } from "../../src/summarize/summarizeQueue.js";
import type { SummarizeInput } from "../../src/summarize/types.js";
import { listedToolTokens, summaryTokens } from "../../src/catalog/renderTools.js";
import { startFakeOpenAi } from "../helpers/fakeOpenAi.js";
import type { FakeOpenAi } from "../helpers/fakeOpenAi.js";
import { waitFor } from "../helpers/waitFor.js";
import { loadCorpusTools } from "./corpus.js";
import { ArraySink, JsonlFileSink, captureLogger, inputsOf, repoPrompt } from "./queueFixtures.js";

const corpus = loadCorpusTools();
const github = corpus.filter((t) => t.server === "github");
const gitlab = corpus.filter((t) => t.server === "gitlab");
const prompt = repoPrompt();
const MODEL = "test-model";

let fake: FakeOpenAi;
let queues: SummarizeQueue[] = [];
let tempDirs: string[] = [];

beforeEach(async () => {
  fake = await startFakeOpenAi();
});

afterEach(async () => {
  await Promise.allSettled(queues.map((q) => q.close({ abortRunning: true })));
  queues = [];
  await fake.close();
  await Promise.allSettled(tempDirs.map((dir) => rm(dir, { recursive: true, force: true })));
  tempDirs = [];
});

function summarizer(options: { batchSize?: number; timeoutMs?: number } = {}): OpenAiSummarizer {
  return new OpenAiSummarizer({
    model: MODEL,
    baseUrl: fake.baseUrl,
    apiKey: "test-key",
    timeoutMs: options.timeoutMs ?? 15_000,
    batchSize: options.batchSize ?? 8,
    prompt,
  });
}

function makeQueue(options: Partial<SummarizeQueueOptions> & { sink: SummarizeQueueOptions["sink"] }): SummarizeQueue {
  const queue = new SummarizeQueue({
    summarizer: summarizer(),
    measure: summaryTokens,
    concurrency: 2,
    maxRetries: 3,
    baseBackoffMs: 5,
    ...options,
  });
  queues.push(queue);
  return queue;
}

/** One valid entry per input, nothing else. */
function expectOneEntryEach(entries: CacheEntry[], inputs: SummarizeInput[]): void {
  expect(entries.map((e) => e.key).sort()).toEqual(inputs.map((i) => i.key).sort());
  for (const entry of entries) {
    expect(cacheEntrySchema.safeParse(entry).success, entry.key).toBe(true);
    const input = inputs.find((i) => i.key === entry.key);
    expect(entry.server).toBe(input?.server);
    expect(entry.tool).toBe(input?.tool.name);
    expect(entry.hash).toBe(entry.key.split(":").pop());
    expect(entry.summary.trim()).not.toBe("");
  }
}

describe("SummarizeQueue with the OpenAI summarizer", () => {
  it("summarizes a batch in one request and stores full entries", async () => {
    const sink = new ArraySink();
    const now = new Date("2026-11-21T10:00:00.000Z");
    const queue = makeQueue({ sink, now: () => now });
    const inputs = inputsOf(github.slice(0, 3));
    for (const input of inputs) expect(queue.enqueue(input)).toBe(true);
    await queue.drain();

    expect(fake.requests).toHaveLength(1);
    const request = fake.requests[0];
    expect(request?.authorization).toBe("Bearer test-key");
    expect(request?.body["model"]).toBe(MODEL);
    expect(request?.body["response_format"]).toEqual({ type: "json_object" });
    expect(request?.tools).toEqual(inputs.map((i) => i.tool.name));
    expect(request?.server).toBe("github");
    const messages = request?.body["messages"] as Array<{ role: string; content: string }>;
    expect(messages[0]?.content).toBe(prompt.text);

    expectOneEntryEach(sink.entries, inputs);
    for (const entry of sink.entries) {
      expect(entry.summarizer).toBe(`openai:${MODEL}`);
      expect(entry.prompt).toBe("summarize-tool@1");
      expect(entry.fallback).toBeUndefined();
      expect(entry.createdAt).toBe("2026-11-21T10:00:00.000Z");
      const input = inputs.find((i) => i.key === entry.key);
      const tool = input?.tool;
      expect(entry.tokensBefore).toBe(listedToolTokens(tool!));
      expect(entry.tokensAfter).toBeLessThan(entry.tokensBefore);
    }
    expect(queue.stats()).toMatchObject({ queued: 0, running: 0, done: 3, generated: 3, fallbacks: 0, requests: 1, retries: 0 });
  });

  it("batches tools of one server, up to batch_size per request", async () => {
    const sink = new ArraySink();
    const queue = makeQueue({ sink, summarizer: summarizer({ batchSize: 4 }) });
    const inputs = inputsOf([...github.slice(0, 10), ...gitlab.slice(0, 3)]);
    for (const input of inputs) queue.enqueue(input);
    await queue.drain();

    expect(fake.requests).toHaveLength(Math.ceil(10 / 4) + Math.ceil(3 / 4));
    for (const request of fake.requests) {
      expect(request.tools.length).toBeLessThanOrEqual(4);
      const pool = request.server === "github" ? github : gitlab;
      for (const name of request.tools) expect(pool.some((t) => t.tool.name === name)).toBe(true);
    }
    expect(fake.requests.flatMap((r) => r.tools).sort()).toEqual(inputs.map((i) => i.tool.name).sort());
    expectOneEntryEach(sink.entries, inputs);
  });

  it("honours retry-after on 429, then succeeds", async () => {
    const sink = new ArraySink();
    const { logger, lines } = captureLogger();
    const queue = makeQueue({ sink, logger });
    fake.script({ kind: "rateLimit", retryAfter: "1" }, { kind: "ok" });
    const inputs = inputsOf(github.slice(0, 2));
    for (const input of inputs) queue.enqueue(input);
    await queue.drain();

    expect(fake.requests.map((r) => r.behaviour)).toEqual(["rateLimit", "ok"]);
    const retry = lines.find((l) => l["message"] === "summarizer request failed; retrying");
    expect(retry?.["code"]).toBe(ErrorCode.SUMMARIZER_RATE_LIMITED);
    expect(retry?.["delayMs"]).toBeGreaterThanOrEqual(1000);
    expect(queue.stats()).toMatchObject({ rateLimited: 1, retries: 1, generated: 2, fallbacks: 0, requests: 2 });
    expectOneEntryEach(sink.entries, inputs);
  });

  it("honours retry-after-ms on 429", async () => {
    const sink = new ArraySink();
    const { logger, lines } = captureLogger();
    const queue = makeQueue({ sink, logger, baseBackoffMs: 1 });
    fake.script({ kind: "rateLimit", retryAfterMs: "120" });
    const inputs = inputsOf(github.slice(0, 1));
    queue.enqueue(inputs[0] as SummarizeInput);
    await queue.drain();
    const retry = lines.find((l) => l["message"] === "summarizer request failed; retrying");
    expect(retry?.["delayMs"]).toBeGreaterThanOrEqual(120);
    expectOneEntryEach(sink.entries, inputs);
    expect(sink.entries[0]?.summarizer).toBe(`openai:${MODEL}`);
  });

  it("retries a 500 and succeeds", async () => {
    const sink = new ArraySink();
    const queue = makeQueue({ sink });
    fake.script({ kind: "status", status: 500 }, { kind: "ok" });
    const inputs = inputsOf(github.slice(0, 3));
    for (const input of inputs) queue.enqueue(input);
    await queue.drain();
    expect(fake.requests.map((r) => r.behaviour)).toEqual(["status", "ok"]);
    expect(queue.stats()).toMatchObject({ retries: 1, generated: 3, failed: 0, fallbacks: 0 });
    expectOneEntryEach(sink.entries, inputs);
  });

  it("falls back to extractive when 500 never ends", async () => {
    const sink = new ArraySink();
    const queue = makeQueue({ sink, maxRetries: 2 });
    fake.setDefault({ kind: "status", status: 500 });
    const inputs = inputsOf(github.slice(0, 2));
    for (const input of inputs) queue.enqueue(input);
    await queue.drain();
    expect(fake.requests).toHaveLength(3);
    expect(queue.stats()).toMatchObject({ retries: 2, failed: 2, fallbacks: 2, generated: 0, done: 2 });
    expectOneEntryEach(sink.entries, inputs);
    for (const entry of sink.entries) {
      expect(entry.summarizer).toBe("extractive@3");
      expect(entry.prompt).toBe("none");
      expect(entry.fallback).toMatch(/^retries exhausted: SUMMARIZER_FAILED/);
      expect(fallbackCause(entry.fallback!)).toBe("failed");
    }
  });

  it("retries a request that timed out", async () => {
    const sink = new ArraySink();
    const queue = makeQueue({ sink, summarizer: summarizer({ timeoutMs: 400 }) });
    fake.script({ kind: "hang" }, { kind: "ok" });
    const inputs = inputsOf(github.slice(0, 2));
    for (const input of inputs) queue.enqueue(input);
    await queue.drain();
    expect(fake.requests.map((r) => r.behaviour)).toEqual(["hang", "ok"]);
    expect(queue.stats()).toMatchObject({ retries: 1, generated: 2, fallbacks: 0 });
    expectOneEntryEach(sink.entries, inputs);
  });

  it("falls back without retrying when the reply is not JSON", async () => {
    const sink = new ArraySink();
    const queue = makeQueue({ sink });
    fake.script({ kind: "notJson" });
    const inputs = inputsOf(github.slice(0, 2));
    for (const input of inputs) queue.enqueue(input);
    await queue.drain();
    expect(fake.requests).toHaveLength(1);
    expect(queue.stats()).toMatchObject({ failed: 2, fallbacks: 2, retries: 0 });
    expectOneEntryEach(sink.entries, inputs);
    for (const entry of sink.entries) expect(entry.fallback).toMatch(/SUMMARIZER_FAILED: summarizer reply is not JSON/);
  });

  it("falls back for the tools a reply leaves out", async () => {
    const sink = new ArraySink();
    const queue = makeQueue({ sink });
    fake.script({ kind: "omit", count: 1 });
    const inputs = inputsOf(github.slice(0, 3));
    for (const input of inputs) queue.enqueue(input);
    await queue.drain();
    expectOneEntryEach(sink.entries, inputs);
    const last = sink.entries.find((e) => e.key === inputs[2]?.key);
    expect(last?.summarizer).toBe("extractive@3");
    expect(last?.fallback).toMatch(/no entry for tool/);
    expect(queue.stats()).toMatchObject({ generated: 2, fallbacks: 1, failed: 1 });
  });

  it("rejects an invented parameter with the guard and stores the extractive summary", async () => {
    const sink = new ArraySink();
    const queue = makeQueue({ sink });
    fake.script({ kind: "invent", param: "invented_option" });
    const inputs = inputsOf(github.slice(0, 2));
    for (const input of inputs) queue.enqueue(input);
    await queue.drain();
    expect(fake.requests).toHaveLength(1);
    expect(queue.stats()).toMatchObject({ guardRejections: 2, fallbacks: 2, generated: 0, failed: 0 });
    expectOneEntryEach(sink.entries, inputs);
    const extractive = new ExtractiveSummarizer();
    for (const entry of sink.entries) {
      expect(entry.summarizer).toBe("extractive@3");
      expect(entry.fallback).toMatch(/^guard: params\.invented_option is not a property/);
      expect(fallbackCause(entry.fallback!)).toBe("rejected");
      const tool = inputs.find((i) => i.key === entry.key)?.tool;
      expect(entry.summary).toBe(tool ? extractive.summarizeTool(tool).summary : "");
    }
  });

  it("does not retry a 400", async () => {
    const sink = new ArraySink();
    const queue = makeQueue({ sink });
    fake.setDefault({ kind: "status", status: 400 });
    const inputs = inputsOf(github.slice(0, 2));
    for (const input of inputs) queue.enqueue(input);
    await queue.drain();
    expect(fake.requests).toHaveLength(1);
    expect(queue.stats()).toMatchObject({ retries: 0, failed: 2, fallbacks: 2 });
    expectOneEntryEach(sink.entries, inputs);
    for (const entry of sink.entries) expect(entry.fallback).toMatch(/^SUMMARIZER_FAILED: .*400/);
  });

  it("runs one job per key however often it is enqueued", async () => {
    const sink = new ArraySink();
    const queue = makeQueue({ sink });
    const [input] = inputsOf(github.slice(0, 1));
    if (!input) throw new Error("no input");
    const accepted = [1, 2, 3, 4, 5].map(() => queue.enqueue(input));
    expect(accepted).toEqual([true, false, false, false, false]);
    expect(queue.stats().queued).toBe(1);
    await queue.drain();
    expect(fake.requests).toHaveLength(1);
    expect(sink.entries).toHaveLength(1);

    // Done in this process: ignored, unless forced.
    expect(queue.enqueue(input)).toBe(false);
    expect(queue.enqueue(input, { force: true })).toBe(true);
    await queue.drain();
    expect(fake.requests).toHaveLength(2);
    expect(sink.entries).toHaveLength(2);
  });

  it("ignores a key enqueued again while its request runs", async () => {
    const sink = new ArraySink();
    const queue = makeQueue({ sink });
    fake.script({ kind: "ok", delayMs: 300 });
    const [input] = inputsOf(github.slice(0, 1));
    if (!input) throw new Error("no input");
    queue.enqueue(input);
    await waitFor(() => fake.requests.length === 1, { what: "the first request" });
    expect(queue.stats().running).toBe(1);
    expect(queue.enqueue(input)).toBe(false);
    await queue.drain();
    expect(fake.requests).toHaveLength(1);
    expect(sink.entries).toHaveLength(1);
  });

  it("stops calling the summarizer at the spend cap and falls back", async () => {
    const sink = new ArraySink();
    const queue = makeQueue({ sink, summarizer: summarizer({ batchSize: 1 }), maxRequests: 2, concurrency: 1 });
    const inputs = inputsOf(github.slice(0, 5));
    for (const input of inputs) queue.enqueue(input);
    await queue.drain();
    expect(fake.requests).toHaveLength(2);
    expect(queue.stats()).toMatchObject({ requests: 2, capReached: 3, generated: 2, fallbacks: 3 });
    expectOneEntryEach(sink.entries, inputs);
    const capped = sink.entries.filter((e) => e.fallback !== undefined);
    expect(capped).toHaveLength(3);
    for (const entry of capped) {
      expect(entry.fallback).toMatch(/^SPEND_CAP_REACHED/);
      expect(fallbackCause(entry.fallback!)).toBe("capped");
    }
  });

  it("keeps at most max_concurrency requests in flight", async () => {
    const sink = new ArraySink();
    const queue = makeQueue({ sink, summarizer: summarizer({ batchSize: 1 }), concurrency: 2 });
    fake.setDefault({ kind: "ok", delayMs: 400 });
    const inputs = inputsOf(github.slice(0, 6));
    for (const input of inputs) queue.enqueue(input);
    await queue.drain();
    expect(fake.requests).toHaveLength(6);
    expect(fake.maxInFlight).toBe(2);
    expectOneEntryEach(sink.entries, inputs);
  });

  it("notifies entry listeners until they unsubscribe", async () => {
    const sink = new ArraySink();
    const queue = makeQueue({ sink });
    const seen: string[] = [];
    const off = queue.onEntry((entry) => seen.push(entry.key));
    const [first, second] = inputsOf(github.slice(0, 2));
    if (!first || !second) throw new Error("no inputs");
    queue.enqueue(first);
    await queue.drain();
    off();
    queue.enqueue(second);
    await queue.drain();
    expect(seen).toEqual([first.key]);
    expect(sink.entries).toHaveLength(2);
  });

  it("writes entries that round-trip through a JSONL file", async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "abridge-summarize-"));
    tempDirs.push(dir);
    const file = path.join(dir, "summaries.jsonl");
    const queue = makeQueue({ sink: new JsonlFileSink(file) });
    fake.script({ kind: "ok" }, { kind: "invent" });
    const inputs = inputsOf([...github.slice(0, 3), ...gitlab.slice(0, 2)]);
    for (const input of inputs) queue.enqueue(input);
    await queue.drain();
    const lines = (await readFile(file, "utf8")).split("\n").filter((l) => l.length > 0);
    const entries = lines.map((line) => cacheEntrySchema.parse(JSON.parse(line)));
    expectOneEntryEach(entries, inputs);
    expect(entries.some((e) => e.fallback?.startsWith("guard:"))).toBe(true);
  });

  it("rejects a key that is not server:tool:hash of its input", () => {
    const queue = makeQueue({ sink: new ArraySink() });
    const tool = github[0]?.tool;
    if (!tool) throw new Error("no tool");
    expect(() => queue.enqueue({ key: `github:${tool.name}:xyz`, server: "github", tool })).toThrowError(AbridgeError);
    expect(() => queue.enqueue({ key: `gitlab:${tool.name}:0123456789abcdef`, server: "github", tool })).toThrowError(/expected key/);
  });
});

describe("SummarizeQueue drain and close", () => {
  it("drain resolves at once when idle and rejects when its signal aborts", async () => {
    const queue = makeQueue({ sink: new ArraySink() });
    await queue.drain();
    fake.setDefault({ kind: "hang" });
    const [input] = inputsOf(github.slice(0, 1));
    if (!input) throw new Error("no input");
    queue.enqueue(input);
    const controller = new AbortController();
    const draining = queue.drain(controller.signal);
    await waitFor(() => fake.requests.length === 1, { what: "the request" });
    controller.abort();
    await expect(draining).rejects.toMatchObject({ code: ErrorCode.CANCELLED });
  });

  it("close aborts running requests when asked, drops queued jobs and is idempotent", async () => {
    const sink = new ArraySink();
    const queue = makeQueue({ sink, summarizer: summarizer({ batchSize: 1 }), concurrency: 1 });
    fake.setDefault({ kind: "hang" });
    const inputs = inputsOf(github.slice(0, 3));
    for (const input of inputs) queue.enqueue(input);
    await waitFor(() => fake.requests.length === 1, { what: "the first request" });
    const closing = queue.close({ abortRunning: true });
    expect(queue.close()).toBe(closing);
    await closing;
    expect(sink.entries).toHaveLength(0);
    expect(fake.requests).toHaveLength(1);
    expect(queue.enqueue(inputsOf(github.slice(3, 4))[0] as SummarizeInput)).toBe(false);
    expect(queue.stats()).toMatchObject({ queued: 0, running: 0 });
    await queue.drain();
  });

  it("close ends a backoff sleep at once", async () => {
    const sink = new ArraySink();
    const queue = makeQueue({ sink, baseBackoffMs: 600_000, maxBackoffMs: 600_000 });
    fake.setDefault({ kind: "status", status: 503 });
    const inputs = inputsOf(github.slice(0, 1));
    queue.enqueue(inputs[0] as SummarizeInput);
    await waitFor(() => queue.stats().retries === 1, { what: "the first retry to be scheduled" });
    await queue.close();
    expect(fake.requests).toHaveLength(1);
    expect(sink.entries).toHaveLength(0);
  });

  it("holds requests back to requests_per_minute, and close ends the wait", async () => {
    const sink = new ArraySink();
    // One request a minute: the second batch must wait for its slot however free the slots are.
    const queue = makeQueue({ sink, summarizer: summarizer({ batchSize: 1 }), concurrency: 2, requestsPerMinute: 1 });
    const inputs = inputsOf(github.slice(0, 2));
    for (const input of inputs) queue.enqueue(input);
    await waitFor(() => sink.entries.length === 1, { what: "the first entry" });
    expect(fake.requests).toHaveLength(1);
    expect(queue.stats()).toMatchObject({ running: 1, requests: 1 });
    await queue.close();
    expect(fake.requests).toHaveLength(1);
    expect(sink.entries).toHaveLength(1);
  });

  it("close lets a running request finish and stores its entries", async () => {
    const sink = new ArraySink();
    const queue = makeQueue({ sink });
    fake.setDefault({ kind: "ok", delayMs: 300 });
    const inputs = inputsOf(github.slice(0, 2));
    for (const input of inputs) queue.enqueue(input);
    await waitFor(() => fake.requests.length === 1, { what: "the request" });
    await queue.close();
    expectOneEntryEach(sink.entries, inputs);
  });

  it("close aborts running requests when its signal fires", async () => {
    const sink = new ArraySink();
    const queue = makeQueue({ sink });
    fake.setDefault({ kind: "hang" });
    queue.enqueue(inputsOf(github.slice(0, 1))[0] as SummarizeInput);
    await waitFor(() => fake.requests.length === 1, { what: "the request" });
    const deadline = new AbortController();
    const closing = queue.close({ signal: deadline.signal });
    deadline.abort();
    await closing;
    expect(sink.entries).toHaveLength(0);
  });
});

describe("SummarizeQueue with the extractive summarizer", () => {
  it("stores extractive entries without requests, spend cap or rate limit", async () => {
    const sink = new ArraySink();
    const extractive = new ExtractiveSummarizer();
    const queue = makeQueue({ sink, summarizer: extractive, fallback: extractive, maxRequests: 0, requestsPerMinute: 1 });
    const inputs = inputsOf(corpus.filter((t) => t.server === "desktop-commander"));
    for (const input of inputs) queue.enqueue(input);
    await queue.drain();
    expect(fake.requests).toHaveLength(0);
    expectOneEntryEach(sink.entries, inputs);
    for (const entry of sink.entries) {
      expect(entry.summarizer).toBe("extractive@3");
      expect(entry.prompt).toBe("none");
      expect(entry.fallback).toBeUndefined();
      expect(entry.tokensAfter).toBeLessThan(entry.tokensBefore);
    }
    expect(queue.stats()).toMatchObject({ generated: inputs.length, fallbacks: 0, capReached: 0 });
  });
});

describe("queue helpers", () => {
  it("RateLimiter spaces request starts evenly", () => {
    let nowMs = 1_000;
    const limiter = new RateLimiter(60, () => nowMs);
    expect([limiter.reserve(), limiter.reserve(), limiter.reserve()]).toEqual([0, 1000, 2000]);
    nowMs += 10_000;
    expect(limiter.reserve()).toBe(0);
    expect(limiter.reserve()).toBe(1000);
  });

  it("queueLimitsFromConfig maps the [summary] section", () => {
    expect(queueLimitsFromConfig(summarySchema.parse({ max_requests: 10, requests_per_minute: 30 }))).toEqual({
      concurrency: 4,
      maxRetries: 4,
      requestsPerMinute: 30,
      maxRequests: 10,
    });
  });
});
