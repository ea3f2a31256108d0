/**
 * Where the daemon listens: a unix socket in its state dir (0700) by default, so no other local
 * user can reach it, let alone take its place once it is gone; loopback TCP when asked for or when
 * the socket path would be too long for a unix socket. The bundled client works over both.
 */
import { link, lstat, mkdir, readdir, rename, stat, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { DaemonClient } from "../../../src/daemon/client/daemonClient.js";
import { Daemon, type DaemonStartResult } from "../../../src/daemon/server/daemon.js";
import { MAX_SOCKET_PATH_BYTES } from "../../../src/daemon/server/daemonListener.js";
import { lockFilePath, readLock } from "../../../src/daemon/wire/lockfile.js";
import { memoryLogger, RawClient, startDaemon, testSetup } from "../daemonHarness.js";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function client(stateDir: string): DaemonClient {
  const made = new DaemonClient({ stateDir });
  cleanups.push(() => made.close());
  return made;
}

/** Lists, calls and reads a schema through the bundled client. */
async function useDaemon(stateDir: string): Promise<void> {
  const c = client(stateDir);
  expect((await c.listTools()).map((t) => t.uri)).toContain("mcp://echo/echo");
  expect(await c.callTool("echo", "echo", { text: "over the socket" })).toMatchObject({ content: [{ text: "over the socket" }] });
  expect(await c.getSchema("echo", "echo")).toMatchObject({ uri: "mcp://echo/echo" });
  expect(await c.callTool("echo", "echo", { text: "again" })).toMatchObject({ content: [{ text: "again" }] });
}

/** A unix listener at `socketPath`, closed after the test by another name (so the path stays). */
async function listenerAt(socketPath: string): Promise<Server> {
  const bound = `${path.dirname(socketPath)}/.other`;
  const server = createServer((socket) => socket.end(`${JSON.stringify({ ok: true, other: true })}\n`));
  await new Promise<void>((resolve) => server.listen(bound, resolve));
  await rename(bound, socketPath);
  cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return server;
}

describe("where the daemon listens", { timeout: 60_000 }, () => {
  it("a unix socket in the state dir by default (0600 in a 0700 dir); the client works over it; it is removed on stop", async () => {
    const setup = await testSetup();
    const daemon = await startDaemon(setup);
    const socketPath = path.resolve(setup.stateDir, "daemon.sock");
    expect(daemon.address).toBe(`unix:${socketPath}`);
    const lock = await readLock(lockFilePath(setup.stateDir));
    expect(lock.state === "ok" && lock.lock.address).toBe(`unix:${socketPath}`);
    const info = await lstat(socketPath);
    expect(info.isSocket()).toBe(true);
    expect(info.mode & 0o777).toBe(0o600);
    expect((await stat(setup.stateDir)).mode & 0o777).toBe(0o700);
    // Only the published name is left: the name it was bound at is gone.
    expect((await readdir(setup.stateDir)).filter((name) => name.startsWith(".s-"))).toEqual([]);
    await useDaemon(setup.stateDir);
    await daemon.close();
    await expect(lstat(socketPath)).rejects.toMatchObject({ code: "ENOENT" });
    expect((await readLock(lockFilePath(setup.stateDir))).state).toBe("missing");
  });

  it("loopback TCP when asked for; the client works over it", async () => {
    const setup = await testSetup();
    const daemon = await startDaemon(setup, { tcp: true });
    expect(daemon.address).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(await readdir(setup.stateDir)).not.toContain("daemon.sock");
    await useDaemon(setup.stateDir);
  });

  it("falls back to loopback TCP, with a warning, when the socket path is too long for a unix socket", async () => {
    const setup = await testSetup();
    const long = path.join(setup.dir, "s".repeat(Math.max(1, MAX_SOCKET_PATH_BYTES - setup.dir.length)));
    expect(Buffer.byteLength(path.join(long, "daemon.sock"))).toBeGreaterThan(MAX_SOCKET_PATH_BYTES);
    const { logger, lines } = memoryLogger();
    const daemon = await startDaemon({ ...setup, stateDir: long }, { logger });
    expect(daemon.address).toMatch(/^127\.0\.0\.1:\d+$/);
    const warning = lines.find((line) => line.includes("listening on loopback TCP instead of a unix socket"));
    expect(warning).toBeDefined();
    expect(warning).toContain(`over the ${MAX_SOCKET_PATH_BYTES}`);
    expect(await readdir(long)).not.toContain("daemon.sock");
    await useDaemon(long);

    // A socket path given explicitly that is too long is an error, not a silent change.
    const explicit = path.join(long, "explicit.sock");
    await expect(
      Daemon.start({
        config: setup.config,
        stateDir: path.join(setup.dir, "state-explicit"),
        cacheFile: path.join(setup.dir, "c.jsonl"),
        env: {},
        socketPath: explicit,
      }),
    ).rejects.toMatchObject({ code: "DAEMON_UNAVAILABLE", message: expect.stringContaining(explicit) });
  });

  it("replaces a dead daemon's socket file, and a stop leaves a socket that is not its own alone", async () => {
    const setup = await testSetup("");
    await mkdir(setup.stateDir, { recursive: true, mode: 0o700 });
    const socketPath = path.resolve(setup.stateDir, "daemon.sock");
    // What a killed daemon leaves: a socket file nothing listens on.
    const dead = createServer();
    await new Promise<void>((resolve) => dead.listen(`${setup.stateDir}/.dead`, resolve));
    await link(`${setup.stateDir}/.dead`, socketPath);
    await new Promise<void>((resolve) => dead.close(() => resolve()));
    expect((await lstat(socketPath)).isSocket()).toBe(true);

    const daemon = await startDaemon(setup, { heartbeatMs: 100 });
    expect(daemon.address).toBe(`unix:${socketPath}`);
    const raw = await RawClient.connect(daemon.address);
    expect(await raw.request({ op: "stats", token: daemon.token })).toMatchObject({ ok: true });
    raw.close();

    // Another daemon took the state dir over: its lock and its socket. This one loses the lock at
    // its next heartbeat and stops, and must not remove the socket that is not its own.
    await listenerAt(socketPath);
    const lock = await readLock(lockFilePath(setup.stateDir));
    if (lock.state !== "ok") throw new Error("no lock");
    await writeFile(lockFilePath(setup.stateDir), `${JSON.stringify({ ...lock.lock, token: "t".repeat(43) })}\n`, { mode: 0o600 });
    expect(await daemon.closed).toBe("lost-lock");
    const other = await RawClient.connect(`unix:${socketPath}`);
    expect(await other.next()).toEqual({ ok: true, other: true });
  });

  it("of daemons started at once on one state dir, the winner's socket is the one at the path", async () => {
    const setup = await testSetup("");
    const results: DaemonStartResult[] = await Promise.all(
      Array.from({ length: 4 }, () => Daemon.start({ config: setup.config, stateDir: setup.stateDir, cacheFile: path.join(setup.dir, "c.jsonl"), env: {} })),
    );
    const started = results.flatMap((r) => (r.status === "started" ? [r.daemon] : []));
    cleanups.push(() => Promise.all(started.map((d) => d.close({ graceMs: 1_000 }))).then(() => undefined));
    expect(started).toHaveLength(1);
    const winner = started[0]!;
    for (const result of results) if (result.status === "running") expect(result.holder.token).toBe(winner.token);
    const raw = await RawClient.connect(winner.address);
    expect(await raw.request({ op: "stats", token: winner.token })).toMatchObject({ ok: true, stats: { pid: process.pid } });
    expect((await readdir(setup.stateDir)).filter((name) => name.startsWith(".s-"))).toEqual([]);
  });
});
