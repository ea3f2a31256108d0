/**
 * The streamable HTTP transport seen from the wire, with a raw node:http client on a real socket:
 * a call is answered with plain JSON unless something tied to it must reach the client first
 * (progress, a sampling request), then with SSE; the GET stream carries list_changed; DELETE ends
 * the session; bad sessions, bad JSON, bad versions and oversized bodies are refused.
 */
import http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import path from "node:path";
import { parseConfigText } from "../../src/config/loadConfig.js";
import { Bridge } from "../../src/core/bridge.js";
import { startHttpServer, type HttpFrontend } from "../../src/serve/httpServer.js";
import { fixtureServerToml, pidsWithMarker } from "../helpers/cliHarness.js";
import { useTempDir } from "../helpers/tempDir.js";
import { Watch } from "../helpers/waitFor.js";

const ACCEPT = { "content-type": "application/json", accept: "application/json, text/event-stream" };
const VERSION = "2025-06-18";

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
}

/** One request on a socket of its own; `onData` sees the body as it streams. */
function send(
  url: string,
  method: string,
  headers: Record<string, string>,
  body?: string,
  onData?: (text: string) => void,
): { req: http.ClientRequest; done: Promise<Answer>; responded: Promise<number> } {
  let req!: http.ClientRequest;
  let responded!: (status: number) => void;
  const headersIn = new Promise<number>((resolve) => (responded = resolve));
  const done = new Promise<Answer>((resolve, reject) => {
    req = http.request(url, { method, agent: false, headers }, (res) => {
      responded(res.statusCode ?? 0);
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        text += chunk;
        onData?.(text);
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(body);
  });
  return { req, done, responded: headersIn };
}

function post(url: string, headers: Record<string, string>, body: unknown): Promise<Answer> {
  return send(url, "POST", { ...ACCEPT, ...headers }, typeof body === "string" ? body : JSON.stringify(body)).done;
}

/** The JSON-RPC messages of an SSE body, in order. */
function sseMessages(text: string): Record<string, unknown>[] {
  return text
    .split("\n")
    .filter((line) => line.startsWith("data:"))
    .map((line) => JSON.parse(line.slice(5)) as Record<string, unknown>);
}

describe("serve --http transport on the wire", () => {
  const temp = useTempDir({ scope: "all", marker: "wire" });
  let bridge: Bridge | undefined;
  let frontend: HttpFrontend;
  let small: HttpFrontend;

  // One bridge for the file: the tests are about the transport, each on sessions of its own.
  beforeAll(async () => {
    const dir = temp.path;
    const marker = temp.marker;
    // Generous start-up limits: tsx fixtures start slowly on a loaded machine.
    const slowStart = "connect_timeout_ms = 120000";
    const toml =
      'mode = "full"\nstartup_grace_ms = 120000\n' +
      fixtureServerToml("conf", "conformanceServer.ts", ["--marker", marker], slowStart) +
      fixtureServerToml("lc", "listChangedServer.ts", ["--marker", marker], slowStart);
    const config = parseConfigText(toml, { file: path.join(dir, "abridge.toml"), env: {} });
    bridge = await Bridge.open({ config, cacheFile: path.join(dir, "summaries.jsonl"), env: {}, stateDir: path.join(dir, "state"), changeDebounceMs: 10 });
    await bridge.start();
    frontend = await startHttpServer(bridge, { port: 0 });
    small = await startHttpServer(bridge, { port: 0, maxBodyBytes: 1024 });
  }, 240_000);
  afterAll(async () => {
    await Promise.allSettled([frontend?.close(), small?.close()]);
    await bridge?.close();
    expect(pidsWithMarker(temp.marker)).toEqual([]);
  });

  /** Initializes a session (declaring `capabilities`) and returns the headers its requests carry. */
  async function open(capabilities: Record<string, unknown> = {}, url = frontend.url): Promise<Record<string, string>> {
    const init = await post(
      url,
      {},
      { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: VERSION, capabilities, clientInfo: { name: "raw", version: "1" } } },
    );
    expect(init.status).toBe(200);
    const session = init.headers["mcp-session-id"];
    expect(typeof session).toBe("string");
    const headers = { "mcp-session-id": session as string, "mcp-protocol-version": VERSION };
    expect((await post(url, headers, { jsonrpc: "2.0", method: "notifications/initialized" })).status).toBe(202);
    return headers;
  }

  it("answers a plain call with application/json, even for a client that declared sampling", async () => {
    for (const capabilities of [{}, { sampling: {}, elicitation: {} }]) {
      const headers = await open(capabilities);
      const answer = await post(frontend.url, headers, {
        jsonrpc: "2.0",
        id: 2,
        method: "tools/call",
        params: { name: "conf_test_simple_text", arguments: {} },
      });
      expect(answer.status).toBe(200);
      expect(answer.headers["content-type"]).toBe("application/json");
      expect(answer.headers["mcp-session-id"]).toBe(headers["mcp-session-id"]);
      const message = JSON.parse(answer.text) as { id: number; result: { content: { text: string }[] } };
      expect(message.id).toBe(2);
      expect(message.result.content[0]!.text).toContain("simple text");
    }
  });

  it("streams a call with a progress token: the progress notifications, then the result", async () => {
    const headers = await open();
    const answer = await post(frontend.url, headers, {
      jsonrpc: "2.0",
      id: 3,
      method: "tools/call",
      params: { name: "conf_test_tool_with_progress", arguments: {}, _meta: { progressToken: "tok" } },
    });
    expect(answer.status).toBe(200);
    expect(answer.headers["content-type"]).toBe("text/event-stream");
    const messages = sseMessages(answer.text);
    const progress = messages.filter((m) => m.method === "notifications/progress").map((m) => m.params as { progressToken: string; progress: number });
    expect(progress.map((p) => p.progress)).toEqual([0, 50, 100]);
    expect(progress.every((p) => p.progressToken === "tok")).toBe(true);
    expect(messages.at(-1)).toMatchObject({ id: 3, result: { content: [{ type: "text" }] } });
  });

  it("relays a sampling request on the call's stream and the client's answer back", async () => {
    const headers = await open({ sampling: {} });
    let sampling: { id: number | string; params: { messages: { content: { text: string } }[] } } | undefined;
    const streamed = new Watch();
    const call = send(
      frontend.url,
      "POST",
      { ...ACCEPT, ...headers },
      JSON.stringify({ jsonrpc: "2.0", id: 4, method: "tools/call", params: { name: "conf_test_sampling", arguments: { prompt: "six times seven?" } } }),
      (text) => {
        sampling ??= sseMessages(text).find((m) => m.method === "sampling/createMessage") as typeof sampling;
        streamed.changed();
      },
    );
    await streamed.until(() => sampling !== undefined, { what: "the sampling request" });
    expect(sampling!.params.messages[0]!.content.text).toBe("six times seven?");
    const reply = await post(frontend.url, headers, {
      jsonrpc: "2.0",
      id: sampling!.id,
      result: { role: "assistant", content: { type: "text", text: "forty-two" }, model: "test-model", stopReason: "endTurn" },
    });
    expect(reply.status).toBe(202);
    const answer = await call.done;
    expect(answer.headers["content-type"]).toBe("text/event-stream");
    expect(sseMessages(answer.text).at(-1)).toMatchObject({ id: 4, result: { content: [{ type: "text", text: "LLM response: forty-two" }] } });
  });

  it("sends tools/list_changed on the session's GET stream", async () => {
    const headers = await open();
    let seen = "";
    const streamed = new Watch();
    const stream = send(frontend.url, "GET", { accept: "text/event-stream", ...headers }, undefined, (text) => {
      seen = text;
      streamed.changed();
    });
    // Destroyed below while open: its end is an abort, expected.
    stream.done.catch(() => undefined);
    try {
      expect(await stream.responded).toBe(200);
      // A client is told of changes to a list it has seen.
      const listed = await post(frontend.url, headers, { jsonrpc: "2.0", id: 4, method: "tools/list" });
      expect(listed.text).toContain("lc_add_tool");
      const added = await post(frontend.url, headers, {
        jsonrpc: "2.0",
        id: 5,
        method: "tools/call",
        params: { name: "lc_add_tool", arguments: { name: "fresh" } },
      });
      expect(added.status).toBe(200);
      await streamed.until(() => sseMessages(seen).some((m) => m.method === "notifications/tools/list_changed"), { what: "list_changed on the GET stream" });
      // A second GET stream on the same session is refused while the first is open.
      const second = await send(frontend.url, "GET", { accept: "text/event-stream", ...headers }).done;
      expect(second.status).toBe(409);
    } finally {
      stream.req.destroy();
    }
  });

  it("answers a batch with an array of the answers", async () => {
    const headers = await open();
    const answer = await post(frontend.url, headers, [
      { jsonrpc: "2.0", id: 10, method: "ping" },
      { jsonrpc: "2.0", id: 11, method: "tools/call", params: { name: "conf_test_simple_text", arguments: {} } },
    ]);
    expect(answer.status).toBe(200);
    expect(answer.headers["content-type"]).toBe("application/json");
    const messages = JSON.parse(answer.text) as { id: number }[];
    expect(messages.map((m) => m.id).sort()).toEqual([10, 11]);
  });

  it("DELETE ends the session: its id is then unknown (404)", async () => {
    const headers = await open();
    const before = frontend.sessions();
    const deleted = await send(frontend.url, "DELETE", headers).done;
    expect(deleted.status).toBe(200);
    expect(frontend.sessions()).toBe(before - 1);
    const after = await post(frontend.url, headers, { jsonrpc: "2.0", id: 6, method: "ping" });
    expect(after.status).toBe(404);
    expect(JSON.parse(after.text)).toMatchObject({ error: { code: -32001 } });
  });

  it("refuses an unknown session (404), bad JSON (400, -32700), a non-JSON-RPC body, an unsupported protocol version and a missing Accept", async () => {
    const headers = await open();
    const unknown = await post(frontend.url, { "mcp-session-id": "no-such-session" }, { jsonrpc: "2.0", id: 1, method: "ping" });
    expect(unknown.status).toBe(404);

    const badJson = await post(frontend.url, headers, "{nope");
    expect(badJson.status).toBe(400);
    expect(badJson.headers["content-type"]).toBe("application/json");
    expect(JSON.parse(badJson.text)).toMatchObject({ jsonrpc: "2.0", id: null, error: { code: -32700 } });
    expect(JSON.parse(badJson.text).error.message).toContain("invalid JSON");

    const notRpc = await post(frontend.url, headers, { hello: "world" });
    expect(notRpc.status).toBe(400);
    expect(JSON.parse(notRpc.text)).toMatchObject({ error: { code: -32600 } });

    const badVersion = await post(frontend.url, { ...headers, "mcp-protocol-version": "1999-01-01" }, { jsonrpc: "2.0", id: 7, method: "ping" });
    expect(badVersion.status).toBe(400);
    expect(JSON.parse(badVersion.text).error.message).toContain("1999-01-01");

    const noAccept = await send(
      frontend.url,
      "POST",
      { "content-type": "application/json", ...headers },
      JSON.stringify({ jsonrpc: "2.0", id: 8, method: "ping" }),
    ).done;
    expect(noAccept.status).toBe(406);

    // The session is still usable after all of that.
    const ping = await post(frontend.url, headers, { jsonrpc: "2.0", id: 9, method: "ping" });
    expect(JSON.parse(ping.text)).toMatchObject({ id: 9, result: {} });
  });

  it("refuses a body over the size limit with 413 and keeps serving", async () => {
    const headers = await open({}, small.url);
    const big = { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "conf_test_simple_text", arguments: { pad: "x".repeat(4096) } } };
    const refused = await post(small.url, headers, big);
    expect(refused.status).toBe(413);
    expect(JSON.parse(refused.text).error.message).toContain("over 1024 bytes");
    const ping = await post(small.url, headers, { jsonrpc: "2.0", id: 3, method: "ping" });
    expect(ping.status).toBe(200);
  });
});
