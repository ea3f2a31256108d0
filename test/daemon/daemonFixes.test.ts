/**
 * Regressions of the daemon review: config identity in the lock, bounded memory and idle time
 * against unauthenticated or non-reading clients, and calls that wait only for their own server.
 */
import { once } from "node:events";
import { mkdir, writeFile } from "node:fs/promises";
import { connect, type Socket } from "node:net";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { DaemonClient } from "../../src/client/daemonClient.js";
import { ensureDaemon } from "../../src/client/ensureDaemon.js";
import { lockFilePath, readLock } from "../../src/wire/lockfile.js";
import { MAX_BUFFERED_ANSWER_BYTES } from "../../src/daemon/daemonSession.js";
import { parseAddress } from "../../src/wire/protocol.js";
import { isAbridgeError } from "../../src/model/errors.js";
import { fixtureServerToml } from "../helpers/cliHarness.js";
import { memoryLogger, RawClient, startDaemon, testSetup } from "./daemonHarness.js";

function rawSocket(address: string): Promise<Socket> {
  const parsed = parseAddress(address);
  if (!parsed || parsed.kind !== "tcp") throw new Error(`bad address ${address}`);
  const socket = connect({ host: parsed.host, port: parsed.port });
  socket.on("error", () => undefined);
  return once(socket, "connect").then(() => socket);
}

async function waitFor(predicate: () => boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error("condition not reached");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe("daemon review fixes", { timeout: 60_000 }, () => {
  it("refuses to hand out a daemon started for another config, or an older content of this one", async () => {
    const setup = await testSetup("");
    const daemon = await startDaemon(setup);
    const lock = await readLock(lockFilePath(setup.stateDir));
    expect(lock.state === "ok" && lock.lock.configPath === setup.configFile && lock.lock.configHash?.startsWith("sha256:")).toBe(true);
    expect(daemon.stats()).toMatchObject({ config: { path: setup.configFile } });

    // Same config: served.
    const same = await ensureDaemon({ stateDir: setup.stateDir, config: setup.configFile, timeoutMs: 10_000 });
    expect(same.info.pid).toBe(daemon.info.pid);

    const other = path.join(setup.dir, "other.toml");
    await writeFile(other, 'mode = "full"\n');
    const error = await ensureDaemon({ stateDir: setup.stateDir, config: other, timeoutMs: 10_000 }).catch((err: unknown) => err);
    expect(isAbridgeError(error, "DAEMON_CONFIG_MISMATCH")).toBe(true);
    const message = (error as Error).message;
    expect(message).toContain(setup.configFile);
    expect(message).toContain(other);
    expect(message).toContain("daemon stop");
    expect(message).toContain("--state-dir");

    // Decision: an edited file is a mismatch too (the daemon read it once), not a silent reload.
    await writeFile(setup.configFile, `# edited\n`, { flag: "a" });
    const edited = await ensureDaemon({ stateDir: setup.stateDir, config: setup.configFile, timeoutMs: 10_000 }).catch((err: unknown) => err);
    expect(isAbridgeError(edited, "DAEMON_CONFIG_MISMATCH")).toBe(true);
    expect((edited as Error).message).toContain("has changed");
  });

  it("serves a client that connects while the bridge is still opening, and still stops", async () => {
    const setup = await testSetup("");
    // A large summary cache keeps the bridge opening for a while after the lockfile (with the
    // address in it) is written: the window in which a polling client connects.
    const cacheFile = path.join(setup.dir, "cache", "summaries.jsonl");
    await mkdir(path.dirname(cacheFile), { recursive: true });
    const line = (i: number): string =>
      JSON.stringify({
        key: `big:tool_${i}:${i.toString(16).padStart(16, "0")}`,
        server: "big",
        tool: `tool_${i}`,
        hash: i.toString(16).padStart(16, "0"),
        summary: `Does the ${i}th thing.`,
        params: {},
        summarizer: "extractive@3",
        prompt: "none",
        tokensBefore: 40,
        tokensAfter: 8,
        createdAt: "2026-01-01T00:00:00.000Z",
      });
    await writeFile(cacheFile, Array.from({ length: 60_000 }, (_, i) => line(i)).join("\n") + "\n");
    let started = false;
    const starting = startDaemon(setup).then((daemon) => ((started = true), daemon));
    let lock = await readLock(lockFilePath(setup.stateDir));
    while (lock.state !== "ok" && !started) {
      await new Promise((resolve) => setImmediate(resolve));
      lock = await readLock(lockFilePath(setup.stateDir));
    }
    if (lock.state !== "ok") throw new Error("no lockfile");
    const client = await RawClient.connect(lock.lock.address);
    // The premise: connected (and asking) before the daemon was ready to serve.
    expect(started).toBe(false);
    const answer = client.request({ op: "stats", token: lock.lock.token, id: "early" });
    const daemon = await starting;
    expect(await answer).toMatchObject({ id: "early", ok: true });
    // Stopping must not wait for a connection accepted before the daemon existed.
    const stopped = await Promise.race([
      daemon.close({ graceMs: 500 }).then(() => "stopped"),
      new Promise<string>((resolve) => setTimeout(() => resolve("still stopping after 10 s"), 10_000).unref()),
    ]);
    expect(stopped).toBe("stopped");
  });

  it("closes a connection after its first refused token, rate-limits the log, and still goes idle under a flood", async () => {
    const setup = await testSetup("");
    const { logger, lines } = memoryLogger();
    const daemon = await startDaemon(setup, { logger, idleTimeoutMs: 1_500 });
    let stopped: string | undefined;
    void daemon.closed.then((reason) => (stopped = reason));
    let connections = 0;
    let closedByDaemon = 0;
    // A peer without the token that keeps sending `{}` lines (and never reads), reconnecting
    // whenever it is cut off, until the daemon stops.
    const deadline = Date.now() + 30_000;
    while (stopped === undefined && Date.now() < deadline) {
      const socket = await rawSocket(daemon.address).catch(() => undefined);
      if (!socket) break;
      connections += 1;
      // Not events.once: it would reject on the EPIPE a write to a cut-off socket raises.
      const closed = new Promise<boolean>((resolve) => socket.once("close", () => resolve(true)));
      let open = true;
      void closed.then(() => (open = false));
      // Writing on until the socket dies: a peer that never reads learns of the close by its writes failing.
      while (open && Date.now() < deadline) {
        socket.write("{}\n".repeat(1_000));
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      if (!open) closedByDaemon += 1;
      socket.destroy();
      await closed;
    }
    expect(stopped).toBe("idle");
    expect(connections).toBeGreaterThan(1);
    // Every connection was cut off by the daemon (after its first refusal, or when it stopped).
    expect(closedByDaemon).toBe(connections);
    expect((daemon.stats().daemon as { refused: number }).refused).toBeGreaterThanOrEqual(connections - 1);
    // One warning line per window, however many refusals.
    expect(lines.filter((l) => l.includes("request refused")).length).toBeLessThanOrEqual(Math.ceil(30_000 / 10_000) + 1);
  });

  it("stops reading a client that never reads once its answers fill the buffer, and resumes on drain", async () => {
    const setup = await testSetup("");
    const daemon = await startDaemon(setup);
    const socket = await rawSocket(daemon.address);
    socket.pause();
    const request = `${JSON.stringify({ op: "stats", token: daemon.token })}\n`;
    const count = 20_000;
    // Written without waiting: the client side buffers whatever the daemon does not read.
    socket.write(request.repeat(count));
    const stats = (): { bufferedBytes: number; peakBufferedBytes: number; pausedConnections: number } =>
      daemon.stats().daemon as { bufferedBytes: number; peakBufferedBytes: number; pausedConnections: number };
    await waitFor(() => stats().pausedConnections === 1);
    const answerBytes = JSON.stringify(daemon.stats()).length + 100;
    // Bounded: the limit, plus what one read chunk's requests answered before the pause took hold.
    expect(stats().bufferedBytes).toBeLessThanOrEqual(MAX_BUFFERED_ANSWER_BYTES + 64 * answerBytes);
    // Reading again, every request is answered.
    let received = 0;
    socket.on("data", (chunk: Buffer) => {
      for (const byte of chunk) if (byte === 10) received += 1;
    });
    socket.resume();
    await waitFor(() => received === count, 45_000);
    expect(stats().peakBufferedBytes).toBeLessThanOrEqual(MAX_BUFFERED_ANSWER_BYTES + 64 * answerBytes);
    socket.destroy();
  });

  it("calls a ready server while another still starts, and lets the daemon's own error arrive first", async () => {
    const setup = await testSetup();
    const servers = [
      fixtureServerToml("echo", "echoServer.ts", ["--tools", "1", "--marker", setup.dir]),
      fixtureServerToml("hang", "hangServer.ts", ["--marker", setup.dir], "connect_timeout_ms = 8000"),
    ].join("\n");
    const hung = await testSetup(servers);
    const daemon = await startDaemon(hung);
    const client = new DaemonClient({ stateDir: hung.stateDir });
    try {
      expect(await client.callTool("echo", "echo", { text: "fast" })).toMatchObject({ content: [{ text: "fast" }] });
      // Answered before the hanging server's start has even timed out.
      expect(daemon.bridge.status("hang")?.state).toBe("connecting");
      // The daemon waits up to hang's connect_timeout_ms (8 s); the client, told a 1 s call
      // timeout, must wait for that rather than give up at 1 s + margin with DAEMON_UNAVAILABLE.
      const error = await client.callTool("hang", "anything", {}, { timeoutMs: 1_000 }).catch((err: unknown) => err);
      expect(isAbridgeError(error)).toBe(true);
      expect(["UPSTREAM_UNAVAILABLE", "UPSTREAM_TIMEOUT"]).toContain((error as { code: string }).code);
      // list_tools answers once every server has settled; hang failed, echo's tools are there.
      const tools = await client.listTools();
      expect(tools.map((t) => t.name)).toContain("echo");
    } finally {
      client.close();
    }
  });
});
