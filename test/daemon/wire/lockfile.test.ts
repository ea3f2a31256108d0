import { spawnSync } from "node:child_process";
import { readFile, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  acquireLock,
  isLockStale,
  judgeLock,
  lockFilePath,
  newToken,
  readLock,
  refreshLock,
  releaseLock,
  type LockInfo,
} from "../../../src/daemon/wire/lockfile.js";
import { daemonProof, newNonce } from "../../../src/daemon/wire/daemonProof.js";
import { tempDir } from "../../helpers/cliHarness.js";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

async function lockDir(): Promise<string> {
  const { dir, cleanup } = await tempDir("abridge-lock-");
  cleanups.push(cleanup);
  return lockFilePath(dir);
}

function lockFor(pid: number, heartbeat = new Date()): LockInfo {
  return {
    pid,
    address: "127.0.0.1:1",
    token: newToken(),
    started: heartbeat.toISOString(),
    version: "test",
    heartbeat: heartbeat.toISOString(),
    heartbeatMs: 1_000,
  };
}

/** A pid that existed and has exited (a child we waited for). */
function deadPid(): number {
  const result = spawnSync(process.execPath, ["-e", ""]);
  return result.pid;
}

describe("daemon lockfile", () => {
  it("creates the lock 0600 with its whole content", async () => {
    const file = await lockDir();
    const lock = lockFor(process.pid);
    expect(await acquireLock(file, lock)).toEqual({ acquired: true });
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect(JSON.parse(await readFile(file, "utf8"))).toEqual(lock);
    // No temp or takeover files are left beside it.
    const { readdir } = await import("node:fs/promises");
    expect(await readdir(path.dirname(file))).toEqual(["abridge.lock"]);
  });

  it("lets exactly one of ten simultaneous takers win", async () => {
    const file = await lockDir();
    const locks = Array.from({ length: 10 }, () => lockFor(process.pid));
    const results = await Promise.all(locks.map((lock) => acquireLock(file, lock)));
    const winners = results.filter((r) => r.acquired);
    expect(winners).toHaveLength(1);
    const held = await readLock(file);
    if (held.state !== "ok") throw new Error("no lock");
    for (const result of results) if (!result.acquired) expect(result.holder.token).toBe(held.lock.token);
  });

  it("takes over a lock whose pid is dead, and only one of ten takers wins it", async () => {
    const file = await lockDir();
    const dead = lockFor(deadPid());
    await writeFile(file, JSON.stringify(dead), { mode: 0o600 });
    expect(isLockStale(await readLock(file))).toBe(true);
    const locks = Array.from({ length: 10 }, () => lockFor(process.pid));
    const results = await Promise.all(locks.map((lock) => acquireLock(file, lock)));
    expect(results.filter((r) => r.acquired)).toHaveLength(1);
    const held = await readLock(file);
    expect(held.state === "ok" && held.lock.token !== dead.token).toBe(true);
  });

  it("takes over a live pid's lock only when its heartbeat is old", async () => {
    const file = await lockDir();
    const fresh = lockFor(process.pid);
    await writeFile(file, JSON.stringify(fresh), { mode: 0o600 });
    const first = await acquireLock(file, lockFor(process.pid));
    expect(first).toEqual({ acquired: false, holder: fresh });

    const old = lockFor(process.pid, new Date(Date.now() - 60_000));
    await writeFile(file, JSON.stringify(old));
    expect(await acquireLock(file, lockFor(process.pid))).toEqual({ acquired: true });
  });

  it("keeps a late-heartbeat lock whose holder proves itself, and takes it once the holder is silent or cannot prove it", async () => {
    const { createServer } = await import("node:net");
    const file = await lockDir();
    // A holder on a busy machine: its heartbeat is a minute late, but it answers at its address,
    // proving that it holds the lock's token (it is given the lock to prove).
    const requests: string[] = [];
    let provenLock: LockInfo | undefined;
    const answering = createServer((socket) => {
      socket.setEncoding("utf8");
      socket.once("data", (line: string) => {
        requests.push(line);
        const hello = JSON.parse(line) as { nonce: string; id: number };
        const nonce = newNonce();
        const proof = provenLock ? daemonProof(provenLock.token, hello.nonce, nonce, provenLock.address) : "x".repeat(43);
        socket.end(`${JSON.stringify({ id: hello.id, ok: true, nonce, proof })}\n`);
      });
    });
    // A hung holder: the kernel accepts the connection, nothing ever answers.
    const silent = createServer(() => undefined);
    const port = async (server: typeof answering): Promise<number> => {
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      return (server.address() as { port: number }).port;
    };
    try {
      const late = { ...lockFor(process.pid, new Date(Date.now() - 60_000)), address: `127.0.0.1:${await port(answering)}` };
      provenLock = late;
      await writeFile(file, JSON.stringify(late), { mode: 0o600 });
      expect(isLockStale(await readLock(file))).toBe(true);
      expect(await judgeLock(await readLock(file))).toBe("live");
      expect(await acquireLock(file, lockFor(process.pid))).toEqual({ acquired: false, holder: late });
      // Asked with a hello: a nonce, never the token.
      expect(JSON.parse(requests[0]!)).toEqual({ op: "hello", nonce: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/), id: 0 });
      expect(requests.join("")).not.toContain(late.token);

      // What answers at the address without the proof (another program holding a dead daemon's
      // port) does not keep the lock alive.
      provenLock = undefined;
      expect(await judgeLock(await readLock(file), { probeTimeoutMs: 2_000 })).toBe("hung");
      expect(requests.join("")).not.toContain(late.token);

      const hung = { ...lockFor(process.pid, new Date(Date.now() - 60_000)), address: `127.0.0.1:${await port(silent)}` };
      await writeFile(file, JSON.stringify(hung), { mode: 0o600 });
      expect(await judgeLock(await readLock(file), { probeTimeoutMs: 300 })).toBe("hung");
      expect(await acquireLock(file, lockFor(process.pid), { probeTimeoutMs: 300 })).toEqual({ acquired: true });
    } finally {
      answering.close();
      silent.close();
    }
  });

  it("judges a missing lock, a dead pid and a fresh heartbeat without asking anyone", async () => {
    const file = await lockDir();
    expect(await judgeLock(await readLock(file))).toBe("missing");
    await writeFile(file, JSON.stringify(lockFor(deadPid())), { mode: 0o600 });
    expect(await judgeLock(await readLock(file))).toBe("dead");
    // Address 127.0.0.1:1 refuses connections: a fresh heartbeat must be enough on its own.
    await writeFile(file, JSON.stringify(lockFor(process.pid)));
    expect(await judgeLock(await readLock(file))).toBe("live");
  });

  it("treats an unreadable lock as stale", async () => {
    const file = await lockDir();
    await writeFile(file, "{not json");
    expect(isLockStale(await readLock(file))).toBe(true);
    expect((await acquireLock(file, lockFor(process.pid))).acquired).toBe(true);
  });

  it("refreshes only its own lock and releases only its own lock", async () => {
    const file = await lockDir();
    const mine = lockFor(process.pid);
    await acquireLock(file, mine);
    const beat = { ...mine, heartbeat: new Date(Date.now() + 1_000).toISOString() };
    expect(await refreshLock(file, beat)).toBe(true);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect(JSON.parse(await readFile(file, "utf8"))).toEqual(beat);

    const other = lockFor(process.pid);
    await writeFile(file, JSON.stringify(other));
    expect(await refreshLock(file, beat)).toBe(false);
    expect(await releaseLock(file, mine.token)).toBe(false);
    expect((await readLock(file)).state).toBe("ok");
    expect(await releaseLock(file, other.token)).toBe(true);
    expect((await readLock(file)).state).toBe("missing");
  });
});
