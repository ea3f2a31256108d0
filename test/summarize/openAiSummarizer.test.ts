import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { AbridgeError, ErrorCode } from "../../src/model/errors.js";
import { compactInputView, OpenAiSummarizer, parseRetryAfter } from "../../src/summarize/openAiSummarizer.js";
import type { SummarizeInput } from "../../src/summarize/types.js";
import { startFakeOpenAi } from "../helpers/fakeOpenAi.js";
import type { FakeOpenAi } from "../helpers/fakeOpenAi.js";
import { waitFor } from "../helpers/waitFor.js";
import { corpusTool, loadCorpusTools } from "./corpus.js";
import { inputsOf, repoPrompt } from "./queueFixtures.js";

const corpus = loadCorpusTools();
const github = corpus.filter((t) => t.server === "github");
const prompt = repoPrompt();

let fake: FakeOpenAi;

beforeEach(async () => {
  fake = await startFakeOpenAi();
});

afterEach(async () => {
  await fake.close();
});

function summarizer(options: { timeoutMs?: number; baseUrl?: string } = {}): OpenAiSummarizer {
  return new OpenAiSummarizer({
    model: "m1",
    baseUrl: options.baseUrl ?? fake.baseUrl,
    apiKey: "k",
    timeoutMs: options.timeoutMs ?? 15_000,
    batchSize: 8,
    prompt,
  });
}

/** The error a summarize call throws. */
async function failure(call: Promise<unknown>): Promise<AbridgeError> {
  try {
    await call;
  } catch (err) {
    if (err instanceof AbridgeError) return err;
    throw err;
  }
  throw new Error("expected the call to fail");
}

describe("OpenAiSummarizer", () => {
  it("has the id, prompt id and batch size it was built with", () => {
    const s = summarizer();
    expect(s.id).toBe("openai:m1");
    expect(s.promptId).toBe("summarize-tool@1");
    expect(s.maxBatch).toBe(8);
  });

  it("sends name, description and a compact input view, and returns one outcome per tool", async () => {
    const inputs = inputsOf(github.slice(0, 2));
    const out = await summarizer().summarize(inputs);
    expect([...out.keys()]).toEqual(inputs.map((i) => i.key));
    for (const outcome of out.values()) expect(outcome.ok).toBe(true);

    const messages = fake.requests[0]?.body["messages"] as Array<{ role: string; content: string }>;
    const user = JSON.parse(messages[1]?.content ?? "{}") as { server: string; tools: Array<Record<string, unknown>> };
    expect(user.server).toBe("github");
    expect(user.tools[0]).toEqual({
      name: inputs[0]?.tool.name,
      description: inputs[0]?.tool.description,
      input: compactInputView(inputs[0]?.tool ?? { name: "", inputSchema: {} }),
    });
  });

  it("builds a compact view with types, required flags, enums and descriptions", () => {
    const view = compactInputView(corpusTool(corpus, "github", "search_repositories"));
    expect(view).toEqual({
      query: { type: "string", description: "Search query (see GitHub search syntax)", required: true },
      page: { type: "number", description: "Page number for pagination (default: 1)", required: false },
      perPage: { type: "number", description: "Number of results per page (default: 30, max: 100)", required: false },
    });
    const feedback = compactInputView(corpusTool(corpus, "firecrawl", "firecrawl_search_feedback"));
    expect(feedback["rating"]).toMatchObject({ type: "string", enum: ["good", "bad", "partial"] });
    expect(feedback["valuableSources"]).toMatchObject({ type: "array<object>" });
  });

  it("maps 429 to a retryable rate-limit error with retryAfterMs", async () => {
    fake.script({ kind: "rateLimit", retryAfter: "7" });
    const err = await failure(summarizer().summarize(inputsOf(github.slice(0, 1))));
    expect(err.code).toBe(ErrorCode.SUMMARIZER_RATE_LIMITED);
    expect(err.retryable).toBe(true);
    expect(err.details?.["retryAfterMs"]).toBe(7000);
  });

  it("maps 5xx and timeouts to retryable failures, other 4xx to final ones", async () => {
    fake.script({ kind: "status", status: 503 }, { kind: "status", status: 400 }, { kind: "status", status: 401 });
    const s = summarizer();
    const input = inputsOf(github.slice(0, 1));
    expect(await failure(s.summarize(input))).toMatchObject({ code: ErrorCode.SUMMARIZER_FAILED, retryable: true });
    expect(await failure(s.summarize(input))).toMatchObject({ code: ErrorCode.SUMMARIZER_FAILED, retryable: false });
    expect(await failure(s.summarize(input))).toMatchObject({ code: ErrorCode.SUMMARIZER_FAILED, retryable: false });

    fake.script({ kind: "hang" });
    const timedOut = await failure(summarizer({ timeoutMs: 300 }).summarize(input));
    expect(timedOut).toMatchObject({ code: ErrorCode.SUMMARIZER_FAILED, retryable: true });
    expect(timedOut.details?.["timeout"]).toBe(true);
  });

  it("maps a refused connection to a retryable failure", async () => {
    // A port that was just free: listen, note it, close.
    const probe = http.createServer();
    await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
    const { port } = probe.address() as AddressInfo;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const err = await failure(summarizer({ baseUrl: `http://127.0.0.1:${port}/v1` }).summarize(inputsOf(github.slice(0, 1))));
    expect(err).toMatchObject({ code: ErrorCode.SUMMARIZER_FAILED, retryable: true });
  });

  it("turns an abort into CANCELLED", async () => {
    fake.script({ kind: "hang" });
    const controller = new AbortController();
    const call = summarizer().summarize(inputsOf(github.slice(0, 1)), { signal: controller.signal });
    await waitFor(() => fake.requests.length > 0, { what: "the request at the endpoint" });
    controller.abort();
    expect(await failure(call)).toMatchObject({ code: ErrorCode.CANCELLED, retryable: false });
  });

  it("fails every tool of a reply that is not JSON, without retry", async () => {
    fake.script({ kind: "notJson" });
    const inputs = inputsOf(github.slice(0, 2));
    const out = await summarizer().summarize(inputs);
    for (const input of inputs) {
      const outcome = out.get(input.key);
      expect(outcome?.ok).toBe(false);
      if (outcome && !outcome.ok) {
        expect(outcome.error).toMatchObject({ code: ErrorCode.SUMMARIZER_FAILED, retryable: false });
      }
    }
  });

  it("fails tools of a reply with the wrong shape, accepts JSON in a code fence", async () => {
    fake.script(
      { kind: "content", content: '{"tools":[{"name":1}]}' },
      { kind: "content", content: '```json\n{"tools":[{"name":"search_users","summary":"Finds users"}]}\n```' },
    );
    const tool = corpusTool(corpus, "github", "search_users");
    const inputs: SummarizeInput[] = inputsOf([{ server: "github", tool }]);
    const bad = await summarizer().summarize(inputs);
    expect(bad.get(inputs[0]?.key ?? "")?.ok).toBe(false);
    const good = await summarizer().summarize(inputs);
    expect(good.get(inputs[0]?.key ?? "")).toEqual({ ok: true, value: { summary: "Finds users", params: {} } });
  });

  it("refuses a batch that mixes servers", async () => {
    const inputs = inputsOf([...github.slice(0, 1), ...corpus.filter((t) => t.server === "gitlab").slice(0, 1)]);
    expect(await failure(summarizer().summarize(inputs))).toMatchObject({ code: ErrorCode.INPUT_INVALID });
    expect(fake.requests).toHaveLength(0);
  });
});

describe("parseRetryAfter", () => {
  it("reads retry-after-ms, seconds and HTTP dates", () => {
    const now = Date.parse("2026-11-21T10:00:00Z");
    expect(parseRetryAfter(new Headers({ "retry-after-ms": "250", "retry-after": "9" }), now)).toBe(250);
    expect(parseRetryAfter(new Headers({ "retry-after": "2" }), now)).toBe(2000);
    expect(parseRetryAfter(new Headers({ "retry-after": "1.5" }), now)).toBe(1500);
    expect(parseRetryAfter(new Headers({ "retry-after": "Sat, 21 Nov 2026 10:00:30 GMT" }), now)).toBe(30_000);
    expect(parseRetryAfter(new Headers({ "retry-after": "soon" }), now)).toBeUndefined();
    expect(parseRetryAfter(new Headers(), now)).toBeUndefined();
  });
});
