/**
 * HTTP sessions used to live forever: 5,000 initialize without DELETE grew memory for good, and
 * each session kept its own serialized copy of the tool list. Now idle sessions expire (an open GET
 * stream alone does not keep one), the number of sessions is capped (503 with Retry-After past
 * it), and every session shares one digest of the list per change.
 */
import path from "node:path";
import v8 from "node:v8";
import vm from "node:vm";
import { afterEach, describe, expect, it } from "vitest";
import { parseConfigText } from "../../src/config/loadConfig.js";
import { Bridge } from "../../src/core/bridge.js";
import { startHttpServer, type HttpFrontend, type HttpServerOptions } from "../../src/serve/httpServer.js";
import { fixtureServerToml, pidsWithMarker, tempDir } from "../helpers/cliHarness.js";
import { waitFor } from "../helpers/waitFor.js";

const ACCEPT = "application/json, text/event-stream";
const INITIALIZE = JSON.stringify({
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "hostile", version: "1" } },
});

let open: { http: HttpFrontend; bridge: Bridge; cleanup: () => Promise<void>; marker: string } | undefined;
afterEach(async () => {
  if (!open) return;
  const { http, bridge, cleanup, marker } = open;
  open = undefined;
  await http.close();
  await bridge.close();
  expect(pidsWithMarker(marker)).toEqual([]);
  await cleanup();
});

async function start(options: Partial<HttpServerOptions>, tools = 2): Promise<{ http: HttpFrontend; bridge: Bridge }> {
  const { dir, cleanup } = await tempDir("abridge-sessions-");
  const marker = `sessions-${path.basename(dir)}`;
  const toml = fixtureServerToml("echo", "echoServer.ts", ["--tools", String(tools), "--page-size", "1000", "--name", marker]);
  const config = parseConfigText(toml, { file: path.join(dir, "abridge.toml"), env: {} });
  const bridge = await Bridge.open({ config, cacheFile: path.join(dir, "summaries.jsonl"), env: {}, stateDir: path.join(dir, "state") });
  await bridge.start();
  const http = await startHttpServer(bridge, { port: 0, ...options });
  open = { http, bridge, cleanup, marker };
  return { http, bridge };
}

/** A raw initialize, as a client that never sends DELETE does it; the session id or the response. */
async function initialize(url: string): Promise<Response & { session: string | undefined }> {
  const res = await fetch(url, { method: "POST", headers: { "content-type": "application/json", accept: ACCEPT }, body: INITIALIZE });
  await res.text();
  return Object.assign(res, { session: res.headers.get("mcp-session-id") ?? undefined });
}

async function listTools(url: string, session: string): Promise<number> {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: ACCEPT, "mcp-session-id": session, "mcp-protocol-version": "2025-06-18" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/list", params: {} }),
  });
  await res.text();
  return res.status;
}

describe("HTTP session limits", () => {
  it("idle sessions expire, and so does one whose only activity is an open GET stream (the stream is ended); an expired one answers 404", async () => {
    // Long enough that a loaded machine opens the stream before the session expires, short enough to wait out.
    const { http } = await start({ sessionIdleMs: 1_500 });
    const streamed = await initialize(http.url);
    // A stream held open and never used held a session for good: 50 of them held a cap of 50 and
    // locked every new client out. Listening alone is not activity.
    const stream = await fetch(http.url, {
      headers: { accept: "text/event-stream", "mcp-session-id": streamed.session!, "mcp-protocol-version": "2025-06-18" },
    });
    expect(stream.status).toBe(200);
    const abandoned: string[] = [];
    for (let i = 0; i < 50; i++) abandoned.push((await initialize(http.url)).session!);
    expect(http.sessions()).toBeGreaterThan(1);
    // The server ends the stream when its session expires: reading it to its end returns.
    await stream.text();
    await waitFor(() => http.sessions() === 0, { what: "every session to expire, the one with a stream too" });
    expect(await listTools(http.url, abandoned[0]!)).toBe(404);
    expect(await listTools(http.url, streamed.session!)).toBe(404);
  });

  it("past the cap an initialize gets 503 with Retry-After; a DELETE makes room", async () => {
    const { http } = await start({ maxSessions: 5 });
    const sessions: string[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await initialize(http.url);
      expect(res.status).toBe(200);
      sessions.push(res.session!);
    }
    const refused = await initialize(http.url);
    expect(refused.status).toBe(503);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(http.sessions()).toBe(5);
    const gone = await fetch(http.url, { method: "DELETE", headers: { "mcp-session-id": sessions[0]!, "mcp-protocol-version": "2025-06-18" } });
    expect(gone.status).toBe(200);
    expect((await initialize(http.url)).status).toBe(200);
    expect(http.sessions()).toBe(5);
  });

  it("sessions share one rendered list: a session costs far less than a copy of the list", async () => {
    v8.setFlagsFromString("--expose-gc");
    const gc = vm.runInNewContext("gc") as () => void;
    const { http, bridge } = await start({}, 3000);
    const listBytes = JSON.stringify(bridge.list()).length;
    expect(listBytes).toBeGreaterThan(400_000);
    // Warm up: the first session renders the list and loads the SDK's code paths.
    await initialize(http.url);
    gc();
    const before = process.memoryUsage().heapUsed;
    const count = 60;
    for (let i = 0; i < count; i++) expect((await initialize(http.url)).status).toBe(200);
    gc();
    const perSession = (process.memoryUsage().heapUsed - before) / count;
    expect(http.sessions()).toBe(count + 1);
    // Each session used to hold the serialized list (listBytes); now it holds a shared digest.
    expect(perSession).toBeLessThan(listBytes / 3);
  });
});
