/**
 * Connections that arrive before the daemon is ready: the lockfile names the address while the
 * bridge is still opening, so a polling client may connect then. It must be served once the
 * daemon is up, and must not keep a stop waiting.
 */
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { lockFilePath, readLock } from "../../../src/daemon/wire/lockfile.js";
import { RawClient, startDaemon, testSetup } from "../daemonHarness.js";
import { settled } from "../../helpers/waitFor.js";

describe("a daemon still opening its bridge", { timeout: 60_000 }, () => {
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
    await writeFile(cacheFile, `${Array.from({ length: 60_000 }, (_, i) => line(i)).join("\n")}\n`);
    let started = false;
    const starting = startDaemon(setup).then((daemon) => {
      started = true;
      return daemon;
    });
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
    await settled(daemon.close({ graceMs: 500 }), { what: "the daemon to stop", timeoutMs: 10_000 });
  });
});
