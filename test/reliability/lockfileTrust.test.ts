/**
 * A client used to trust whatever lockfile it found: in a shared state directory another user's
 * lockfile (pointing at the attacker's listener) received the calls, arguments and API keys
 * included. The lockfile must now be a regular file owned by us, not writable by group or others,
 * in a directory only we (or root) can write, or sticky; anything else is refused with
 * DAEMON_LOCK_UNTRUSTED before a byte is sent.
 */
import { execFileSync } from "node:child_process";
import { chmod, chown, mkdir, symlink, writeFile } from "node:fs/promises";
import net from "node:net";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { DaemonClient } from "../../src/daemon/client/daemonClient.js";
import { ensureDaemon } from "../../src/daemon/client/ensureDaemon.js";
import { lockFilePath, newToken, readLock, type LockInfo } from "../../src/daemon/wire/lockfile.js";
import { tempDir } from "../helpers/cliHarness.js";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A listener posing as the daemon: it keeps every byte a client sends and never answers. */
async function impostor(): Promise<{ port: number; received: () => string }> {
  const chunks: Buffer[] = [];
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    socket.on("error", () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  cleanups.push(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => server.close(resolve));
  });
  return { port: (server.address() as net.AddressInfo).port, received: () => Buffer.concat(chunks).toString("utf8") };
}

/** A state dir holding a live-looking lockfile that points at an impostor. */
async function plantedLock(): Promise<{ stateDir: string; file: string; received: () => string }> {
  const { dir, cleanup } = await tempDir("abridge-trust-");
  cleanups.push(cleanup);
  const stateDir = path.join(dir, "state");
  await mkdir(stateDir, { mode: 0o700 });
  const { port, received } = await impostor();
  const now = new Date().toISOString();
  const lock: LockInfo = {
    pid: process.pid,
    address: `127.0.0.1:${port}`,
    token: newToken(),
    started: now,
    version: "0.0.0",
    heartbeat: now,
    heartbeatMs: 60_000,
  };
  const file = lockFilePath(stateDir);
  await writeFile(file, `${JSON.stringify(lock)}\n`, { mode: 0o600 });
  await chmod(file, 0o600);
  return { stateDir, file, received };
}

/**
 * A call carrying a secret through `stateDir`; the error it ends with. The impostor never answers,
 * so a call that reached it is abandoned as soon as it has received something.
 */
async function callThrough(stateDir: string, received: () => string): Promise<unknown> {
  const client = new DaemonClient({ stateDir });
  const abandon = new AbortController();
  const watch = setInterval(() => {
    if (received() !== "") abandon.abort();
  }, 20);
  try {
    await client.callTool("vault", "store", { api_key: "sk-live-secret" }, { timeoutMs: 60_000, signal: abandon.signal });
    return undefined;
  } catch (err) {
    return err;
  } finally {
    clearInterval(watch);
    client.close();
  }
}

const isRoot = process.getuid?.() === 0;

describe("clients trust only their own lockfile", () => {
  it("a lockfile of another user is refused, and the listener it names receives nothing", async () => {
    const { stateDir, file, received } = await plantedLock();
    if (isRoot) {
      // Really another owner: nobody (65534).
      await chown(file, 65534, 65534);
      const err = await callThrough(stateDir, received);
      expect(err).toMatchObject({ code: "DAEMON_LOCK_UNTRUSTED", message: expect.stringMatching(/belongs to uid 65534, not to this user \(uid 0\)/) });
      const config = path.join(path.dirname(stateDir), "abridge.toml");
      await writeFile(config, "");
      await expect(ensureDaemon({ stateDir, config, timeoutMs: 3_000 })).rejects.toMatchObject({ code: "DAEMON_LOCK_UNTRUSTED" });
    } else {
      // Without root no file can be given away: read it as a different user would see it.
      const uid = (process.getuid?.() ?? 1000) + 1;
      await expect(readLock(file, { uid })).rejects.toMatchObject({
        code: "DAEMON_LOCK_UNTRUSTED",
        message: expect.stringContaining(`not to this user (uid ${uid})`),
      });
    }
    expect(received()).toBe("");
  });

  it("a lockfile writable by group or others is refused", async () => {
    const { stateDir, file, received } = await plantedLock();
    await chmod(file, 0o666);
    expect(await callThrough(stateDir, received)).toMatchObject({ code: "DAEMON_LOCK_UNTRUSTED", message: expect.stringContaining("mode is 0666") });
    await chmod(file, 0o620);
    expect(await callThrough(stateDir, received)).toMatchObject({ code: "DAEMON_LOCK_UNTRUSTED" });
    expect(received()).toBe("");
  });

  it("a state directory others can write is refused unless sticky; one owned by another user is refused", async () => {
    const { stateDir, file, received } = await plantedLock();
    await chmod(stateDir, 0o777);
    expect(await callThrough(stateDir, received)).toMatchObject({
      code: "DAEMON_LOCK_UNTRUSTED",
      message: expect.stringContaining("is writable by others (mode 0777)"),
    });
    await chmod(stateDir, 0o770);
    expect(await callThrough(stateDir, received)).toMatchObject({ code: "DAEMON_LOCK_UNTRUSTED", message: expect.stringContaining("writable by its group") });
    expect(received()).toBe("");
    // Sticky (like /tmp): others cannot replace our file, and our own 0600 file is read.
    await chmod(stateDir, 0o1777);
    expect(await readLock(file)).toMatchObject({ state: "ok" });
    if (isRoot) {
      await chmod(stateDir, 0o700);
      await chown(stateDir, 65534, 65534);
      expect(await callThrough(stateDir, received)).toMatchObject({ code: "DAEMON_LOCK_UNTRUSTED", message: expect.stringContaining("belongs to uid 65534") });
      expect(received()).toBe("");
    }
  });

  it("a symlink or a FIFO at the lockfile path is refused without blocking", async () => {
    const { stateDir, file, received } = await plantedLock();
    const elsewhere = path.join(path.dirname(stateDir), "elsewhere.lock");
    execFileSync("mv", [file, elsewhere]);
    await symlink(elsewhere, file);
    expect(await callThrough(stateDir, received)).toMatchObject({ code: "DAEMON_LOCK_UNTRUSTED", message: expect.stringContaining("symbolic link") });
    execFileSync("rm", [file]);
    execFileSync("mkfifo", ["-m", "600", file]);
    expect(await callThrough(stateDir, received)).toMatchObject({ code: "DAEMON_LOCK_UNTRUSTED", message: expect.stringContaining("not a regular file") });
    expect(received()).toBe("");
  });

  it("our own 0600 lockfile in our 0700 directory is still used: its listener gets the client's hello, and nothing more until it proves itself", async () => {
    const { stateDir, received } = await plantedLock();
    expect(await callThrough(stateDir, received)).toMatchObject({ code: "CANCELLED" });
    expect(JSON.parse(received())).toMatchObject({ op: "hello", nonce: expect.any(String) });
    expect(received()).not.toContain("sk-live-secret");
  });
});
