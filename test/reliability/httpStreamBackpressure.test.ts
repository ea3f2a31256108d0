/**
 * Backpressure on the HTTP front end's streams. An upstream logging a million lines while a session
 * held its GET stream open and never read it took serve from 142 MB to 1.75 GB in 35 s: every line
 * was written into a response nobody drained. Now a stream that pushes back follows the stdio rule
 * (past 1,000 waiting notifications new ones are dropped and counted), and one that is not drained
 * for `streamStallMs` is ended; the session serves on and may open its stream again.
 */
import { once } from "node:events";
import http from "node:http";
import { connect, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { startHttpServer } from "../../src/serve/httpServer.js";
import { waitFor } from "../helpers/waitFor.js";
import { fixtureToml, startBridge } from "../policy/bridgeHarness.js";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const HEADERS = { "content-type": "application/json", accept: "application/json, text/event-stream" };

function post(url: string, headers: Record<string, string>, body: unknown): Promise<{ status: number; headers: http.IncomingHttpHeaders; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: "POST", agent: false, headers: { ...HEADERS, ...headers } }, (res) => {
      let text = "";
      res.on("data", (b: Buffer) => (text += b.toString("utf8")));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
    });
    req.on("error", reject);
    req.end(JSON.stringify(body));
  });
}

async function begin(url: string): Promise<Record<string, string>> {
  const init = await post(
    url,
    {},
    { jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } } },
  );
  const headers = { "mcp-session-id": init.headers["mcp-session-id"] as string, "mcp-protocol-version": "2025-06-18" };
  expect((await post(url, headers, { jsonrpc: "2.0", method: "notifications/initialized" })).status).toBe(202);
  return headers;
}

/**
 * A GET stream on a socket of its own that reads the response's headers and then stops reading:
 * what the server writes after that piles up in the kernel's buffers, then in the server's.
 */
async function stalledStream(url: string, headers: Record<string, string>): Promise<{ socket: Socket; head: string }> {
  const { hostname, port, pathname } = new URL(url);
  const socket = connect({ host: hostname, port: Number(port) });
  await once(socket, "connect");
  const lines = [
    `GET ${pathname} HTTP/1.1`,
    `Host: ${hostname}:${port}`,
    "Accept: text/event-stream",
    ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
  ];
  socket.write(`${lines.join("\r\n")}\r\n\r\n`);
  const [first] = (await once(socket, "data")) as [Buffer];
  socket.pause();
  return { socket, head: first.toString("utf8") };
}

describe("serve --http: a stream its client does not read", () => {
  it("drops notifications past 1,000 waiting, ends the stream once it stalls, and the session serves on", async () => {
    const { bridge, lines, logger, until } = await startBridge(`mode = "full"\n${fixtureToml("hostile", "hostileServer.ts")}`);
    const frontend = await startHttpServer(bridge, { port: 0, streamStallMs: 1_500, logger });
    cleanups.push(() => frontend.close());

    const headers = await begin(frontend.url);
    const { socket, head } = await stalledStream(frontend.url, headers);
    cleanups.push(() => void socket.destroy());
    expect(head).toMatch(/^HTTP\/1\.1 200/);

    // 20,000 log lines of 2 kB from the upstream, outside any call: they go to the GET stream.
    const count = 20_000;
    const started = await post(frontend.url, headers, {
      jsonrpc: "2.0",
      id: 1,
      method: "tools/call",
      params: { name: "hostile_log_flood", arguments: { count, bytes: 2_000 } },
    });
    expect(started.text).toContain("flooding");
    await until(() => lines.some((l) => l.includes("log flood done")), "the upstream to finish its flood", 45_000);
    await until(() => lines.some((l) => l.includes("ending an HTTP stream its client has not read")), "the stalled stream to be ended", 45_000);
    expect(lines.some((l) => l.includes("client is not reading: dropping notifications until it catches up") && l.includes(headers["mcp-session-id"]!))).toBe(
      true,
    );
    const stats = frontend.stats();
    expect(stats.stalledStreams).toBe(1);
    expect(stats.droppedNotifications).toBeGreaterThan(0);

    // Read what was let through: the stream ends after it (before, it never ended, and held all 40 MB).
    let received = 0;
    let events = 0;
    socket.on("data", (b: Buffer) => {
      received += b.length;
      events += b.toString("latin1").split("event: message").length - 1;
    });
    const ended = new Promise<void>((resolve) => socket.once("close", () => resolve()));
    socket.resume();
    await ended;
    // What the kernel's buffers and 1,000 waiting notifications held is all that got through.
    expect(events).toBeLessThan(count / 2);
    expect(received).toBeLessThan((count * 2_000) / 2);
    expect(lines.some((l) => l.includes("notifications dropped while the client was not reading") && /dropped=\d+/.test(l))).toBe(true);

    // The session serves on, and its client may listen again.
    const listed = await post(frontend.url, headers, { jsonrpc: "2.0", id: 2, method: "tools/list", params: {} });
    expect(listed.status).toBe(200);
    const again = await stalledStream(frontend.url, headers);
    cleanups.push(() => void again.socket.destroy());
    expect(again.head).toMatch(/^HTTP\/1\.1 200/);
  });

  it("a session that expires with a stream its client does not read has that stream cut at once, not left to wait", async () => {
    const { bridge, lines, logger, until } = await startBridge(`mode = "full"\n${fixtureToml("hostile", "hostileServer.ts")}`);
    // A stall bound far beyond the test: only the expiry can end the stream.
    const frontend = await startHttpServer(bridge, { port: 0, sessionIdleMs: 1_000, streamStallMs: 600_000, logger });
    cleanups.push(() => frontend.close());
    const headers = await begin(frontend.url);
    const { socket } = await stalledStream(frontend.url, headers);
    cleanups.push(() => void socket.destroy());
    await post(frontend.url, headers, {
      jsonrpc: "2.0",
      id: 1,
      method: "tools/call",
      params: { name: "hostile_log_flood", arguments: { count: 10_000, bytes: 2_000 } },
    });
    // Pings keep the session alive until its stream pushes back; then it is left to expire.
    const started = Date.now();
    for (let id = 2; !lines.some((l) => l.includes("client is not reading: dropping notifications")); id++) {
      if (Date.now() - started > 45_000) throw new Error("gave up waiting for the stream to push back");
      expect((await post(frontend.url, headers, { jsonrpc: "2.0", id, method: "ping" })).status).toBe(200);
    }
    await until(() => lines.some((l) => l.includes("HTTP session expired") && l.includes(headers["mcp-session-id"]!)), "the session to expire", 45_000);
    expect(frontend.sessions()).toBe(0);
    // Ended politely, the response would wait for ever behind what its client never reads,
    // holding the connection; cut, the connection is gone on serve's side, unread as it is.
    // Only serve's count tells (the paused socket here does not read the close): polled.
    const open = (): number => frontend.stats().connections.authenticated + frontend.stats().connections.unauthenticated;
    await waitFor(() => open() === 0, { what: "the unread stream's connection to close", timeoutMs: 45_000, detail: () => JSON.stringify(frontend.stats()) });
    expect(frontend.stats().stalledStreams).toBe(0);
  });
});
