/**
 * Connections to `serve --http`. Any local user can open sockets to its port, token or not: 1,100
 * idle ones put abridge at its 1,024-descriptor limit, the token holder got ECONNRESET until they
 * left (and an upstream could not be spawned), idle sockets lived about 300 s and a trickled
 * header 96 s. Now connections without the token are at most 64 (a new one closes the oldest) and
 * live 10 s at most, those with it are capped (503 past the cap), and new connections are refused
 * while the descriptors in use are within a reserve of the limit, before EMFILE.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import http from "node:http";
import { connect, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { startHttpServer } from "../../src/serve/httpServer.js";
import { fixtureServerToml, pidsWithMarker, tempDir, writeConfig } from "../helpers/cliHarness.js";
import { BIN } from "../helpers/serveHarness.js";
import { Watch, waitFor } from "../helpers/waitFor.js";
import { fixtureToml, startBridge } from "../policy/bridgeHarness.js";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const HEADERS = { "content-type": "application/json", accept: "application/json, text/event-stream" };
const INITIALIZE = {
  jsonrpc: "2.0",
  id: 0,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
};

/** One POST on a new connection; the status, headers and body. */
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

/** A session begun with `auth`; the headers of its later requests. */
async function begin(url: string, auth: Record<string, string> = {}): Promise<Record<string, string>> {
  const init = await post(url, auth, INITIALIZE);
  expect(init.status).toBe(200);
  const headers = { ...auth, "mcp-session-id": init.headers["mcp-session-id"] as string, "mcp-protocol-version": "2025-06-18" };
  expect((await post(url, headers, { jsonrpc: "2.0", method: "notifications/initialized" })).status).toBe(202);
  return headers;
}

function callBody(id: number, name: string, text: string): Record<string, unknown> {
  return { jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: { text } } };
}

/** Sockets opened to `url` that the test holds; `closed` counts those the server closed. */
class Flood {
  readonly sockets: Socket[] = [];
  closed = 0;
  private readonly closes = new Watch();

  async open(url: string, count: number, first?: (socket: Socket, index: number) => void): Promise<void> {
    const { hostname, port } = new URL(url);
    for (let i = 0; i < count; i++) {
      const socket = connect({ host: hostname, port: Number(port) });
      socket.on("error", () => undefined);
      socket.once("close", () => {
        this.closed += 1;
        this.closes.changed();
      });
      this.sockets.push(socket);
      await once(socket, "connect");
      first?.(socket, i);
    }
  }

  /** Resolves once the server has closed at least `count` of the sockets (on each close, no polling). */
  closedAtLeast(count: number): Promise<void> {
    return this.closes.until(() => this.closed >= count, { what: `the server to close ${count} sockets`, detail: () => `closed so far: ${this.closed}` });
  }

  destroy(): void {
    for (const socket of this.sockets) socket.destroy();
  }
}

/** `abridge serve --http` in a shell that set its descriptor limit (soft and hard) to `fds` first. */
async function serveWithFdLimit(fds: number, toml: string, env: Record<string, string> = {}): Promise<{ url: string; stderr: () => string }> {
  const { dir, cleanup } = await tempDir("abridge-fds-");
  const marker = `fds-${dir.split("/").pop()}`;
  const config = await writeConfig(dir, `cache_dir = "cache"\n${toml.replaceAll("MARKER", marker)}`);
  const child: ChildProcess = spawn(
    "sh",
    ["-c", `ulimit -n ${fds} && exec "$0" "$@"`, process.execPath, "--import", "tsx", BIN, "serve", "--config", config, "--http", "127.0.0.1:0"],
    {
      env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", ...env },
      stdio: ["ignore", "ignore", "pipe"],
    },
  );
  let stderr = "";
  cleanups.push(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = once(child, "exit");
      child.kill("SIGTERM");
      await exited;
    }
    expect(pidsWithMarker(marker)).toEqual([]);
    await cleanup();
  });
  const url = await new Promise<string>((resolve, reject) => {
    child.stderr!.on("data", (b: Buffer) => {
      stderr += b.toString("utf8");
      const match = /at (http:\/\/127\.0\.0\.1:\d+\/mcp)/.exec(stderr);
      if (match) resolve(match[1]!);
    });
    child.once("exit", (code) => reject(new Error(`serve exited with ${code}:\n${stderr}`)));
  });
  return { url, stderr: () => stderr };
}

/** Two echo servers, one started afresh for each call (a spawn needs descriptors). */
const UPSTREAMS = [
  fixtureServerToml("echo", "echoServer.ts", ["--tools", "0", "--name", "MARKER"]),
  fixtureServerToml("fresh", "echoServer.ts", ["--tools", "0", "--name", "MARKER"], 'lifecycle = "per_call"'),
].join("\n");

describe("serve --http: connections", () => {
  it("300 idle sockets without the token: the oldest are closed past 64, and the token holder is served, a spawn included", async () => {
    const token = "the-token-of-the-holder";
    const serve = await serveWithFdLimit(256, UPSTREAMS, { ABRIDGE_TOKEN: token });
    const flood = new Flood();
    cleanups.push(() => flood.destroy());
    await flood.open(serve.url, 300);
    // Before, all 300 stayed: past ~220 the process had no descriptor left, and the token holder's
    // connection was reset.
    await flood.closedAtLeast(300 - 64);
    const auth = { authorization: `Bearer ${token}` };
    const headers = await begin(serve.url, auth);
    const echoed = await post(serve.url, headers, callBody(1, "echo_echo", "held out"));
    expect(echoed.text).toContain("held out");
    const fresh = await post(serve.url, headers, callBody(2, "fresh_echo", "spawned"));
    expect(fresh.text).toContain("spawned");
    expect(serve.stderr()).toContain("closed the oldest HTTP connection that has not shown the token");
  });

  it("refuses new connections near the descriptor limit, before EMFILE: a call that spawns still runs", async () => {
    const serve = await serveWithFdLimit(160, `http_max_connections = 1000\n${UPSTREAMS}`);
    const sessions: Record<string, string>[] = [];
    for (let i = 0; i < 200; i++) sessions.push(await begin(serve.url));
    // A call whose headers are in and whose body is held: it is sent once the flood is in place.
    const { hostname, port, pathname } = new URL(serve.url);
    const body = JSON.stringify(callBody(1, "fresh_echo", "spawned at the limit"));
    const held = connect({ host: hostname, port: Number(port) });
    cleanups.push(() => void held.destroy());
    await once(held, "connect");
    let answer = "";
    held.on("data", (b: Buffer) => (answer += b.toString("utf8")));
    const head = [
      `POST ${pathname} HTTP/1.1`,
      `Host: ${hostname}:${port}`,
      "Content-Type: application/json",
      `Accept: ${HEADERS.accept}`,
      `Content-Length: ${Buffer.byteLength(body)}`,
      "Connection: close",
    ];
    held.write(`${[...head, ...Object.entries(sessions[0]!).map(([k, v]) => `${k}: ${v}`)].join("\r\n")}\r\n\r\n`);
    // Each session listens on its own connection, held open: descriptors used up one by one.
    const flood = new Flood();
    cleanups.push(() => flood.destroy());
    await flood.open(serve.url, sessions.length, (socket, i) => {
      const lines = [
        `GET ${pathname} HTTP/1.1`,
        `Host: ${hostname}:${port}`,
        "Accept: text/event-stream",
        ...Object.entries(sessions[i]!).map(([k, v]) => `${k}: ${v}`),
      ];
      socket.write(`${lines.join("\r\n")}\r\n\r\n`);
    });
    await flood.closedAtLeast(1);
    // Written, not ended: a half-closed connection has its request aborted by node:http.
    const ended = once(held, "close");
    held.write(body);
    await ended;
    expect(answer).toMatch(/^HTTP\/1\.1 200/);
    expect(answer).toContain("spawned at the limit");
    // Refused at once, or (while some had not sent their request yet) the oldest of those closed.
    expect(serve.stderr()).toMatch(/(refused an HTTP connection|closed the oldest HTTP connection).*file descriptors are near the limit/);
  });

  it("closes a connection that has not shown the token in time, however it trickles; past the cap a request gets 503", async () => {
    const { bridge } = await startBridge(`mode = "full"\n${fixtureToml("echo", "echoServer.ts", ["--tools", "0"])}`);
    const token = "t0ken";
    const frontend = await startHttpServer(bridge, { port: 0, token, preAuthMs: 500, maxConnections: 2 });
    cleanups.push(() => frontend.close());
    const { hostname, port, pathname } = new URL(frontend.url);

    // A header sent a byte at a time never completes; before, it lived for Node's 60 s header
    // timeout, checked every 30 s.
    const trickle = connect({ host: hostname, port: Number(port) });
    trickle.on("error", () => undefined);
    await once(trickle, "connect");
    const request = `POST ${pathname} HTTP/1.1\r\nHost: ${hostname}:${port}\r\n${"X-Slow: ".padEnd(4000, "x")}`;
    let sent = 0;
    const dribble = setInterval(() => {
      if (sent < request.length) trickle.write(request[sent++]!);
    }, 20);
    cleanups.push(() => clearInterval(dribble));
    const silent = connect({ host: hostname, port: Number(port) });
    silent.on("error", () => undefined);
    await Promise.all([once(trickle, "close"), once(silent, "close")]);
    expect(sent).toBeLessThan(request.length);
    expect(frontend.stats().connectionsClosed.timedOut).toBe(2);

    // Two connections that showed the token, kept alive; a third is answered 503 and closed.
    const agent = new http.Agent({ keepAlive: true, maxSockets: 2 });
    cleanups.push(() => agent.destroy());
    const keepAlive = (n: number): Promise<number> =>
      new Promise((resolve, reject) => {
        const req = http.request(frontend.url, { method: "POST", agent, headers: { ...HEADERS, authorization: `Bearer ${token}` } }, (res) => {
          res.resume();
          res.on("end", () => resolve(res.statusCode ?? 0));
        });
        req.on("error", reject);
        req.end(JSON.stringify({ jsonrpc: "2.0", id: n, method: "ping" }));
      });
    // A ping without a session: 400, after the token was checked.
    expect(await Promise.all([keepAlive(1), keepAlive(2)])).toEqual([400, 400]);
    expect(frontend.stats().connections.authenticated).toBe(2);
    const third = await post(frontend.url, { authorization: `Bearer ${token}` }, INITIALIZE);
    expect(third.status).toBe(503);
    expect(third.headers.connection).toBe("close");
    expect(third.text).toContain("too many connections");
    // Once one of them goes, a new connection is served.
    agent.destroy();
    // The server's count of open connections is announced by no event: polled.
    await waitFor(() => frontend.stats().connections.authenticated === 0, {
      what: "the closed connections to leave the count",
      detail: () => JSON.stringify(frontend.stats()),
    });
    expect((await post(frontend.url, { authorization: `Bearer ${token}` }, INITIALIZE)).status).toBe(200);
  });
});
