/**
 * A stop must not wait on the clients: `server.close()` waits for every accepted socket, and a
 * client that never ends its side (a silent connection without a token, or a host program that
 * keeps its connection open) would hold the stop, the lockfile and the upstream children forever
 * if the daemon only ended its own side.
 */
import { connect, type Socket } from "node:net";
import { describe, expect, it } from "vitest";
import { readLock } from "../../../src/daemon/wire/lockfile.js";
import { parseAddress } from "../../../src/daemon/wire/protocol.js";
import { RawClient, startDaemon, testSetup } from "../daemonHarness.js";
import { settled } from "../../helpers/waitFor.js";

/** A connection that never ends its side; `ended` settles when the daemon has ended its own. */
function openSilently(address: string): Promise<{ socket: Socket; ended: Promise<void> }> {
  const parsed = parseAddress(address);
  if (!parsed) throw new Error(`bad address ${address}`);
  const target = parsed.kind === "unix" ? { path: parsed.path } : { host: parsed.host, port: parsed.port };
  return new Promise((resolve, reject) => {
    const socket = connect({ ...target, allowHalfOpen: true }, () => resolve({ socket, ended }));
    const ended = new Promise<void>((done) => socket.once("end", () => done()));
    socket.once("error", reject);
  });
}

describe("stopping a daemon with connections open", { timeout: 60_000 }, () => {
  it("ends connections whose clients never close, then stops and removes its lockfile", async () => {
    const setup = await testSetup();
    const daemon = await startDaemon(setup);
    // A silent, tokenless connection; one refused for a wrong token, which no session owns after
    // that; neither ever ends its side (allowHalfOpen keeps it open after the daemon's end). And a
    // client that made a request and stays connected.
    const silent = await openSilently(daemon.address);
    const refused = await openSilently(daemon.address);
    const refusal = new Promise<string>((resolve) => refused.socket.once("data", (b: Buffer) => resolve(b.toString("utf8"))));
    refused.socket.write(`${JSON.stringify({ op: "stats", token: "wrong", id: 2 })}\n`);
    expect(await refusal).toContain('"ok":false');
    const client = await RawClient.connect(daemon.address);
    expect(await client.request({ op: "stats", token: daemon.token, id: 1 })).toMatchObject({ id: 1, ok: true });
    await settled(daemon.close({ graceMs: 200 }), { what: "the daemon to stop with connections open", timeoutMs: 10_000 });
    // The daemon's side of both has ended (these clients keep theirs open: `end`, not `close`).
    await Promise.all([silent.ended, refused.ended]);
    expect(await client.next()).toBeUndefined();
    expect((await readLock(daemon.lockFile)).state).toBe("missing");
    for (const open of [silent, refused]) open.socket.destroy();
  });
});
