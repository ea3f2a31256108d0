/**
 * The daemon against clients that misbehave: a peer without the token that floods lines and
 * reconnects, and a client that sends and never reads. The first is cut off and neither fills the
 * log nor keeps the daemon from going idle; the second costs bounded memory and is answered in
 * full once it reads.
 */
import { once } from "node:events";
import { connect, type Socket } from "node:net";
import { describe, expect, it } from "vitest";
import { MAX_BUFFERED_ANSWER_BYTES } from "../../../src/daemon/server/daemonSession.js";
import { parseAddress } from "../../../src/daemon/wire/protocol.js";
import { settled, Watch, waitFor } from "../../helpers/waitFor.js";
import { memoryLogger, startDaemon, testSetup } from "../daemonHarness.js";

function rawSocket(address: string): Promise<Socket> {
  const parsed = parseAddress(address);
  if (parsed?.kind !== "tcp") throw new Error(`bad address ${address}`);
  const socket = connect({ host: parsed.host, port: parsed.port });
  socket.on("error", () => undefined);
  return once(socket, "connect").then(() => socket);
}

describe("the daemon under misbehaving clients", { timeout: 60_000 }, () => {
  it("closes a connection after its first refused token, rate-limits the log, and still goes idle under a flood", async () => {
    const setup = await testSetup("");
    const { logger, lines } = memoryLogger();
    // On loopback TCP, where any local user can open connections like these.
    const daemon = await startDaemon(setup, { logger, idleTimeoutMs: 1_500, tcp: true });
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
      // Writing on until the socket dies: a peer that never reads learns of the close by its writes
      // failing. Each write waits until the one before has left (or failed), then for a turn of the
      // event loop, in which the daemon (in this process) reads: as fast as the daemon takes it.
      while (open && Date.now() < deadline) {
        await new Promise<void>((resolve) => socket.write("{}\n".repeat(1_000), () => setImmediate(resolve)));
      }
      if (!open) closedByDaemon += 1;
      socket.destroy();
      await closed;
    }
    // A refused connect ends the flood as soon as the daemon closes its listener, the first step
    // of stopping, which may be before the stop has finished: wait for it (bounded) to read why.
    if (stopped === undefined) {
      stopped = await settled(daemon.closed, { what: "the daemon to stop", timeoutMs: 15_000 });
    }
    expect(stopped).toBe("idle");
    // At least the first connection; how many more fit in the idle window depends on how fast the
    // machine is (a loaded one may spend the whole window on the first), and proves nothing more.
    expect(connections).toBeGreaterThanOrEqual(1);
    // Every connection was cut off by the daemon (after its first refusal, or when it stopped).
    expect(closedByDaemon).toBe(connections);
    expect(daemon.stats().daemon.refused).toBeGreaterThanOrEqual(connections - 1);
    // One warning line per window, however many refusals.
    expect(lines.filter((l) => l.includes("request refused")).length).toBeLessThanOrEqual(Math.ceil(30_000 / 10_000) + 1);
  });

  it("stops reading a client that never reads once its answers fill the buffer, and resumes on drain", async () => {
    const setup = await testSetup("");
    const daemon = await startDaemon(setup, { tcp: true });
    const socket = await rawSocket(daemon.address);
    socket.pause();
    const request = `${JSON.stringify({ op: "stats", token: daemon.token })}\n`;
    const count = 20_000;
    // Written without waiting: the client side buffers whatever the daemon does not read.
    socket.write(request.repeat(count));
    const stats = (): { bufferedBytes: number; peakBufferedBytes: number; pausedConnections: number } => daemon.stats().daemon;
    await waitFor(() => stats().pausedConnections === 1, { what: "the daemon to stop reading the connection" });
    const answerBytes = JSON.stringify(daemon.stats()).length + 100;
    // Bounded: the limit, plus what one read chunk's requests answered before the pause took hold.
    expect(stats().bufferedBytes).toBeLessThanOrEqual(MAX_BUFFERED_ANSWER_BYTES + 64 * answerBytes);
    // Reading again, every request is answered.
    let received = 0;
    const reading = new Watch();
    socket.on("data", (chunk: Buffer) => {
      for (const byte of chunk) if (byte === 10) received += 1;
      reading.changed();
    });
    socket.resume();
    await reading.until(() => received === count, { what: `${count} answers`, timeoutMs: 45_000, detail: () => `${received} came` });
    expect(stats().peakBufferedBytes).toBeLessThanOrEqual(MAX_BUFFERED_ANSWER_BYTES + 64 * answerBytes);
    socket.destroy();
  });
});
