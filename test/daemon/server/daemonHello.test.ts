/**
 * The `hello` a connection may start with, as a raw peer sees it: the daemon proves that it holds
 * the token (an HMAC over both nonces and its address), and the exchange changes nothing else
 * about a connection before its token: it does not authenticate it, it does not keep the daemon
 * awake, and the 64 KiB and deadline bounds still apply.
 */
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { daemonProof } from "../../../src/daemon/wire/daemonProof.js";
import { RawClient, startDaemon, testSetup } from "../daemonHarness.js";

const nonce = (): string => randomBytes(32).toString("base64url");

describe("the daemon's hello", { timeout: 60_000 }, () => {
  it("answers a connection's first line with the proof, and the token holder goes on on the same connection", async () => {
    const setup = await testSetup();
    for (const daemon of [await startDaemon(setup), await startDaemon({ ...setup, stateDir: `${setup.stateDir}-tcp` }, { tcp: true })]) {
      const client = await RawClient.connect(daemon.address);
      const mine = nonce();
      const answer = await client.request({ op: "hello", nonce: mine, id: 0 });
      expect(Object.keys(answer).sort()).toEqual(["id", "nonce", "ok", "proof"]);
      expect(answer).toMatchObject({ id: 0, ok: true, nonce: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/) });
      expect(answer.proof).toBe(daemonProof(daemon.token, mine, String(answer.nonce), daemon.address));
      expect(answer.nonce).not.toBe(mine);
      expect(await client.request({ op: "stats", token: daemon.token, id: 1 })).toMatchObject({ id: 1, ok: true, stats: { address: daemon.address } });
      // One hello per connection: later it is a request like any other (with the token) and a bad
      // one; the connection stays usable.
      expect(await client.request({ token: daemon.token, op: "hello", nonce: nonce(), id: 2 })).toMatchObject({
        id: 2,
        ok: false,
        error: { code: "DAEMON_BAD_REQUEST" },
      });
      expect(await client.request({ op: "stats", token: daemon.token, id: 3 })).toMatchObject({ id: 3, ok: true });
    }
  });

  it("a fresh nonce gives a fresh proof; the proof is bound to the daemon's address", async () => {
    const setup = await testSetup("");
    const daemon = await startDaemon(setup);
    const proofs = new Set<string>();
    for (let i = 0; i < 3; i++) {
      const client = await RawClient.connect(daemon.address);
      const mine = nonce();
      const answer = await client.request({ op: "hello", nonce: mine, id: 0 });
      expect(answer.proof).not.toBe(daemonProof(daemon.token, mine, String(answer.nonce), "127.0.0.1:1"));
      proofs.add(String(answer.proof));
      client.close();
    }
    expect(proofs.size).toBe(3);
  });

  it("does not authenticate: a request without the token after it is refused and the connection closed", async () => {
    const setup = await testSetup("");
    const daemon = await startDaemon(setup);
    const client = await RawClient.connect(daemon.address);
    expect(await client.request({ op: "hello", nonce: nonce(), id: 0 })).toMatchObject({ ok: true });
    expect(await client.request({ op: "stats", id: 1 })).toMatchObject({ id: 1, ok: false, error: { code: "DAEMON_UNAUTHORIZED" } });
    await client.closed;

    // Nor does a second hello before the token, or a malformed one: refused, closed.
    const twice = await RawClient.connect(daemon.address);
    expect(await twice.request({ op: "hello", nonce: nonce(), id: 0 })).toMatchObject({ ok: true });
    expect(await twice.request({ op: "hello", nonce: nonce(), id: 1 })).toMatchObject({ id: 1, ok: false, error: { code: "DAEMON_UNAUTHORIZED" } });
    await twice.closed;
    for (const bad of [
      { op: "hello", nonce: "short", id: 0 },
      { op: "hello", id: 0 },
      { op: "hello", nonce: nonce(), extra: 1, id: 0 },
    ]) {
      const malformed = await RawClient.connect(daemon.address);
      expect(await malformed.request(bad)).toMatchObject({
        id: 0,
        ok: false,
        error: { code: "DAEMON_UNAUTHORIZED", message: expect.stringContaining("malformed hello") },
      });
      await malformed.closed;
    }
    expect(daemon.stats().daemon.refused).toBe(5);
  });

  it("keeps the pre-auth bounds: 64 KiB after a hello without the token, and the deadline", async () => {
    const setup = await testSetup("");
    const daemon = await startDaemon(setup, { preAuthDeadlineMs: 1_000 });
    const flooding = await RawClient.connect(daemon.address);
    expect(await flooding.request({ op: "hello", nonce: nonce(), id: 0 })).toMatchObject({ ok: true });
    flooding.send("x".repeat(200 * 1024));
    expect(await flooding.next()).toMatchObject({
      ok: false,
      error: { code: "DAEMON_UNAUTHORIZED", message: expect.stringContaining("no token in the first 65536 bytes") },
    });
    await flooding.closed;

    const idle = await RawClient.connect(daemon.address);
    expect(await idle.request({ op: "hello", nonce: nonce(), id: 0 })).toMatchObject({ ok: true });
    expect(await idle.next()).toMatchObject({
      ok: false,
      error: { code: "DAEMON_UNAUTHORIZED", message: expect.stringContaining("no token before the deadline") },
    });
    await idle.closed;
  });

  it("does not keep the daemon awake: hellos on new connections until it idles out", async () => {
    const setup = await testSetup("");
    const daemon = await startDaemon(setup, { idleTimeoutMs: 1_500 });
    let stopped = false;
    const closed = daemon.closed.then((reason) => {
      stopped = true;
      return reason;
    });
    let answered = 0;
    while (!stopped) {
      const client = await RawClient.connect(daemon.address).catch(() => undefined);
      if (!client) break;
      const answer = await client.request({ op: "hello", nonce: nonce(), id: 0 }).catch(() => undefined);
      if (answer?.ok === true) answered += 1;
      client.close();
    }
    expect(await closed).toBe("idle");
    expect(answered).toBeGreaterThan(0);
  });
});
