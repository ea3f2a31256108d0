/**
 * Requests of a token holder that used to cost more than their answer: a batch reusing a request
 * id hung its POST until the client gave up; a 15 MiB nesting bomb took 9 s and 1.2 GB to parse
 * (and held up every other session meanwhile); and 20 batches of 100 slow calls put 2,000 calls on
 * the upstreams at once. Now the second use of an id in a batch gets -32600 at once, a body nested
 * deeper than 256 levels is refused before it is parsed, and a session has at most
 * `maxCallsPerSession` calls in flight, the next one answered at once with a retryable busy error.
 */
import http from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { MAX_JSON_DEPTH } from "../../src/model/jsonDepth.js";
import { startHttpServer, type HttpFrontend } from "../../src/serve/httpServer.js";
import { fixtureToml, startBridge, type TestBridge } from "../policy/bridgeHarness.js";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.allSettled(
    cleanups
      .splice(0)
      .reverse()
      .map((c) => c()),
  );
});

const HEADERS = { "content-type": "application/json", accept: "application/json, text/event-stream" };
const INITIALIZE = {
  jsonrpc: "2.0",
  id: 0,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
};

interface Answer {
  status: number;
  body: unknown;
}

/** One POST on a connection of its own (so that dropping it drops exactly this request). */
function post(url: string, headers: Record<string, string>, body: string, signal?: AbortSignal): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: "POST", agent: false, headers: { ...HEADERS, ...headers }, ...(signal ? { signal } : {}) }, (res) => {
      let text = "";
      res.on("data", (b: Buffer) => (text += b.toString("utf8")));
      res.on("error", reject);
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text === "" ? undefined : (JSON.parse(text) as unknown) }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

/** A session begun on `url`: its headers for later requests. */
async function begin(url: string): Promise<Record<string, string>> {
  const init = await new Promise<http.IncomingMessage>((resolve, reject) => {
    const req = http.request(url, { method: "POST", agent: false, headers: HEADERS }, (res) => {
      res.resume();
      res.on("end", () => resolve(res));
    });
    req.on("error", reject);
    req.end(JSON.stringify(INITIALIZE));
  });
  const session = init.headers["mcp-session-id"];
  expect(typeof session).toBe("string");
  const headers = { "mcp-session-id": session as string, "mcp-protocol-version": "2025-06-18" };
  expect((await post(url, headers, JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }))).status).toBe(202);
  return headers;
}

function call(id: number, name: string, args: Record<string, unknown>): Record<string, unknown> {
  return { jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: args } };
}

/** A bridge with a slow and an echo server behind an HTTP front end; both log to the bridge's lines. */
async function serve(maxCallsPerSession?: number): Promise<{ http: HttpFrontend; lines: string[]; until: TestBridge["until"] }> {
  const { bridge, lines, logger, until } = await startBridge(
    `mode = "full"\n${fixtureToml("slow", "slowServer.ts", [], ["timeout_ms = 300000"])}${fixtureToml("echo", "echoServer.ts", ["--tools", "0"])}`,
  );
  const frontend = await startHttpServer(bridge, {
    port: 0,
    logger,
    ...(maxCallsPerSession !== undefined ? { maxCallsPerSession } : {}),
  });
  cleanups.push(() => frontend.close());
  return { http: frontend, lines, until };
}

describe("serve --http: requests that cost more than their answer", () => {
  it("answers a batch that uses a request id twice at once: the first use runs, the second gets -32600", async () => {
    const { http: frontend } = await serve();
    const headers = await begin(frontend.url);
    const batch = [call(7, "echo_echo", { text: "first" }), call(7, "echo_echo", { text: "second" }), call(8, "echo_echo", { text: "third" })];
    // Before, both uses of 7 waited for one answer and the POST never ended: bounded here so the
    // test fails rather than hangs.
    const answer = await post(frontend.url, headers, JSON.stringify(batch), AbortSignal.timeout(30_000));
    expect(answer.status).toBe(200);
    const answers = answer.body as { id: number; result?: { content: { text: string }[] }; error?: { code: number; message: string } }[];
    expect(answers).toHaveLength(3);
    const texts = answers.filter((a) => a.result !== undefined).map((a) => `${a.id}:${a.result!.content[0]!.text}`);
    expect(texts.sort()).toEqual(["7:first", "8:third"]);
    const refused = answers.filter((a) => a.error !== undefined);
    expect(refused).toEqual([{ jsonrpc: "2.0", id: 7, error: { code: -32600, message: expect.stringContaining("used more than once in this batch") } }]);
    // The session serves on, id 7 included (it was answered).
    const again = await post(frontend.url, headers, JSON.stringify(call(7, "echo_echo", { text: "again" })));
    expect((again.body as { result: { content: { text: string }[] } }).result.content[0]!.text).toBe("again");
  });

  it(`refuses a body nested deeper than ${MAX_JSON_DEPTH} levels before parsing it; one within the bound is served`, async () => {
    const { http: frontend } = await serve();
    const headers = await begin(frontend.url);
    const levels = 500_000;
    const bomb = `${"[".repeat(levels)}${"]".repeat(levels)}`;
    const refused = await post(frontend.url, headers, bomb);
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({ error: { code: -32600, message: expect.stringContaining(`nested deeper than ${MAX_JSON_DEPTH} levels`) } });
    // The same bomb inside a well-formed call, and brackets inside strings that do not count.
    const inside = JSON.stringify(call(1, "echo_echo", { text: "x", deep: "DEEP" })).replace('"DEEP"', `${'{"a":'.repeat(300)}1${"}".repeat(300)}`);
    expect((await post(frontend.url, headers, inside)).body).toMatchObject({ error: { code: -32600, message: expect.stringContaining("nested deeper") } });
    const shallow = call(2, "echo_echo", { text: `${"[{".repeat(2000)} in a string`, deep: JSON.parse(`${"[".repeat(200)}1${"]".repeat(200)}`) as unknown });
    const served = await post(frontend.url, headers, JSON.stringify(shallow));
    expect(served.status).toBe(200);
    expect((served.body as { result: { content: { text: string }[] } }).result.content[0]!.text).toContain("in a string");
  });

  it("keeps at most maxCallsPerSession calls of a session in flight; the next is answered busy at once, lists still served", async () => {
    const { http: frontend, lines, until } = await serve(3);
    const headers = await begin(frontend.url);
    const other = await begin(frontend.url);
    const held = new AbortController();
    const holding = [1, 2, 3].map((id) =>
      post(frontend.url, headers, JSON.stringify(call(id, "slow_sleep", { ms: 120_000, steps: 1 })), held.signal).catch(() => undefined),
    );
    await until(() => lines.filter((l) => /sleeping \d+/.test(l)).length === 3, "three calls to reach the upstream");

    const busy = {
      code: -32000,
      message: expect.stringContaining("server busy: 3 calls of this session are in flight"),
      data: { retryable: true, maxCallsInFlight: 3 },
    };
    const fourth = await post(frontend.url, headers, JSON.stringify(call(4, "echo_echo", { text: "one more" })));
    expect(fourth).toEqual({ status: 200, body: { jsonrpc: "2.0", id: 4, error: busy } });
    const batch = await post(
      frontend.url,
      headers,
      JSON.stringify([call(5, "echo_echo", { text: "a" }), { jsonrpc: "2.0", id: 6, method: "tools/list", params: {} }, call(9, "echo_echo", { text: "b" })]),
    );
    const answers = batch.body as { id: number; error?: unknown; result?: { tools?: unknown[] } }[];
    expect(answers.find((a) => a.id === 5)?.error).toEqual(busy);
    expect(answers.find((a) => a.id === 9)?.error).toEqual(busy);
    expect(answers.find((a) => a.id === 6)?.result?.tools?.length).toBeGreaterThan(0);
    // The bound is per session: another session calls as usual.
    const elsewhere = await post(frontend.url, other, JSON.stringify(call(1, "echo_echo", { text: "other session" })));
    expect((elsewhere.body as { result: { content: { text: string }[] } }).result.content[0]!.text).toBe("other session");

    // Calls that end (here: their client goes) make room again.
    held.abort();
    await Promise.all(holding);
    await until(() => lines.filter((l) => /cancelled \d+/.test(l)).length === 3, "the upstream to see the three calls cancelled");
    const after = await post(frontend.url, headers, JSON.stringify(call(10, "slow_sleep", { ms: 1, steps: 1 })));
    expect((after.body as { result: { content: { text: string }[] } }).result.content[0]!.text).toBe("slept 1 ms");
  });
});
