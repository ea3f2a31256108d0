/**
 * The one line writer of the four transports (stdio front end, daemon session, daemon client,
 * upstream child): however many lines wait for a stream that pushes back, one `drain` listener;
 * lines leave in order, a tick's (or a turn's) lines in one `writev`, bounded in bytes, and a last
 * line given to `end` never overtakes those queued before it. Then each transport, driven against
 * a peer that does not read, keeps exactly that one listener on its stream.
 */
import { once } from "node:events";
import { createServer, connect, type Server, type Socket } from "node:net";
import { PassThrough, Writable } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { DaemonSession, MAX_BUFFERED_ANSWER_BYTES, type SessionHost } from "../../src/daemon/server/daemonSession.js";
import { ClientConnection } from "../../src/daemon/client/clientConnection.js";
import { daemonProof, newNonce } from "../../src/daemon/wire/daemonProof.js";
import { silentLogger } from "../../src/log/logger.js";
import { StdioServerTransport } from "../../src/serve/stdioServerTransport.js";
import { ChildStdioTransport } from "../../src/upstream/process/childStdioTransport.js";
import { LineWriter } from "../../src/util/lineWriter.js";
import { settled, Watch, waitFor } from "../helpers/waitFor.js";

/** A stream whose reader takes nothing until `release()`: every write past `highWaterMark` waits. */
function heldStream(highWaterMark = 16) {
  const chunks: string[] = [];
  const batches: number[] = [];
  const held: (() => void)[] = [];
  let flowing = false;
  const take = (callback: () => void): void => {
    if (flowing) callback();
    else held.push(callback);
  };
  const stream = new Writable({
    highWaterMark,
    write(chunk: Buffer, _encoding, callback) {
      chunks.push(chunk.toString("utf8"));
      batches.push(1);
      take(callback);
    },
    writev(parts, callback) {
      for (const part of parts) chunks.push(String(part.chunk));
      batches.push(parts.length);
      take(callback);
    },
  });
  return {
    stream,
    batches,
    lines: (): string[] => chunks.join("").split("\n").filter(Boolean),
    release: (): void => {
      flowing = true;
      for (const callback of held.splice(0)) callback();
    },
  };
}

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe("LineWriter", () => {
  it("keeps one drain listener while 10,000 lines wait, and writes them in order once the stream drains", async () => {
    const out = heldStream();
    const writer = new LineWriter(out.stream);
    for (let i = 0; i < 10_000; i++) expect(writer.write(`${i}\n`)).toBe(true);
    expect(out.stream.listenerCount("drain")).toBe(1);
    expect(writer.pushingBack).toBe(true);
    // The first 8 lines ("0\n" to "7\n") fill the 16-byte stream; the rest wait.
    expect(writer.queuedLines).toBe(10_000 - 8);
    // Waiting for the stream adds no listener either: every caller shares one promise.
    const waits = Array.from({ length: 100 }, () => writer.drained());
    expect(out.stream.listenerCount("drain")).toBe(1);
    out.release();
    await settled(Promise.all(waits), { what: "the queue to go out" });
    expect(writer.queuedLines).toBe(0);
    expect(writer.queuedBytes).toBe(0);
    expect(out.lines()).toEqual(Array.from({ length: 10_000 }, (_, i) => String(i)));
    expect(out.stream.listenerCount("drain")).toBe(1);
    writer.close();
    expect(out.stream.listenerCount("drain")).toBe(0);
  });

  it("refuses lines past its bound in bytes, and takes them again once the queue went out", async () => {
    const out = heldStream();
    const writer = new LineWriter(out.stream, { maxQueuedBytes: 100 });
    expect(writer.write("first line pushes back the 16-byte stream\n")).toBe(true);
    let taken = 0;
    while (writer.write("0123456789\n")) taken += 1;
    // A line is taken while less than the bound waits: 10 lines of 11 bytes reach 110.
    expect(taken).toBe(10);
    expect(writer.full).toBe(true);
    expect(writer.queuedBytes).toBe(110);
    out.release();
    await settled(writer.drained(), { what: "the queue to go out" });
    expect(writer.full).toBe(false);
    expect(writer.write("after\n")).toBe(true);
    await turn();
    expect(out.lines().at(-1)).toBe("after");
    expect(out.lines()).toHaveLength(12);
  });

  it("sends the lines of one tick in one writev, or of one turn when asked", async () => {
    const tick = heldStream(1024 * 1024);
    tick.release();
    const byTick = new LineWriter(tick.stream);
    for (let i = 0; i < 50; i++) byTick.write(`${i}\n`);
    await new Promise<void>((resolve) => process.nextTick(resolve));
    // Written in the next tick: a batch of its own.
    for (let i = 50; i < 60; i++) byTick.write(`${i}\n`);
    await turn();
    expect(tick.batches).toEqual([50, 10]);

    const whole = heldStream(1024 * 1024);
    whole.release();
    const byTurn = new LineWriter(whole.stream, { batch: "turn" });
    byTurn.write("a\n");
    await Promise.resolve();
    await new Promise<void>((resolve) => process.nextTick(resolve));
    byTurn.write("b\n");
    await turn();
    expect(whole.batches).toEqual([2]);
    expect(whole.lines()).toEqual(["a", "b"]);
  });

  it("counts the marked lines that wait", async () => {
    const out = heldStream();
    const writer = new LineWriter(out.stream);
    writer.write("this first line fills the stream\n", true);
    writer.write("a\n");
    writer.write("b\n", true);
    writer.write("c\n", true);
    expect(writer.queuedMarked).toBe(2);
    expect(writer.queuedLines).toBe(3);
    out.release();
    await settled(writer.drained(), { what: "the queue to go out" });
    expect(writer.queuedMarked).toBe(0);
  });

  it("ends the stream after every queued line, the last line last, and refuses writes from then on", async () => {
    const out = heldStream();
    const writer = new LineWriter(out.stream);
    for (let i = 0; i < 100; i++) writer.write(`${i}\n`);
    writer.end("last\n");
    expect(writer.write("too late\n")).toBe(false);
    expect(out.stream.writableEnded).toBe(false);
    out.release();
    await settled(once(out.stream, "finish"), { what: "the stream to finish" });
    expect(out.lines()).toEqual([...Array.from({ length: 100 }, (_, i) => String(i)), "last"]);
    expect(out.stream.listenerCount("drain")).toBe(0);
  });

  it("closes with its stream: what waits is let go, writes are refused and waiters go on", async () => {
    const out = heldStream();
    const writer = new LineWriter(out.stream);
    for (let i = 0; i < 10; i++) writer.write(`${i}\n`);
    const waiting = writer.drained();
    out.stream.destroy();
    await settled(waiting, { what: "the wait to end with the stream" });
    expect(writer.write("after\n")).toBe(false);
    expect(writer.queuedLines).toBe(0);
    expect(writer.close()).toBe(0);
  });
});

describe("each transport writes through one LineWriter: one drain listener however much waits", () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  it("the stdio front end, answering a client that does not read", async () => {
    const out = heldStream();
    const transport = new StdioServerTransport(new PassThrough(), out.stream);
    await transport.start();
    cleanups.push(() => transport.close());
    for (let id = 0; id < 5_000; id++) await transport.send({ jsonrpc: "2.0", id, result: { text: "x".repeat(100) } });
    expect(out.stream.listenerCount("drain")).toBe(1);
    expect(transport.queuedMessages).toBeGreaterThan(4_000);
    out.release();
    await waitFor(() => transport.queuedMessages === 0, { what: "the answers to go out" });
    expect(out.lines().map((l) => (JSON.parse(l) as { id: number }).id)).toEqual(Array.from({ length: 5_000 }, (_, i) => i));
  });

  it("an upstream child that does not read its stdin", async () => {
    const transport = new ChildStdioTransport({ command: process.execPath, args: ["-e", "setInterval(() => {}, 60_000)"], stderr: "ignore" });
    await transport.start();
    cleanups.push(() => transport.close({ stdinMs: 0, sigtermMs: 2_000 }));
    const stdin = transport.stdin!;
    const text = "z".repeat(1024);
    for (let id = 0; id < 2_000; id++)
      await transport.send({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "echo", arguments: { text } } } as JSONRPCMessage);
    // 2 MB does not fit in a pipe: most of it waits in the writer.
    expect(transport.queuedBytes).toBeGreaterThan(512 * 1024);
    expect(stdin.listenerCount("drain")).toBe(1);
  });

  it("a daemon session answering a client that does not read, with answers waiting on an unordered connection", async () => {
    const token = "t".repeat(32);
    // 50 MiB of answers in all: far past what the kernel's loopback buffers take in (a few MiB, tuned
    // by the kernel), so answers are sure to wait in the session, whatever the machine.
    const answer = "a".repeat(512 * 1024);
    const host: SessionHost = {
      token,
      maxLineBytes: 1024 * 1024,
      logger: silentLogger,
      execute: async () => ({ body: { declarations: answer } }),
      begin: () => undefined,
      end: () => undefined,
      count: () => undefined,
    };
    let session: DaemonSession | undefined;
    let serverSide: Socket | undefined;
    const server = createServer((socket) => {
      serverSide = socket;
      session = new DaemonSession(socket, host, 1);
    });
    await listen(server);
    cleanups.push(() => closeServer(server));
    const client = connect(addressOf(server));
    cleanups.push(() => void client.destroy());
    await once(client, "connect");
    client.pause();
    const requests = 100;
    const lines = [JSON.stringify({ op: "options", unordered: true, token, id: 0 })];
    for (let id = 1; id <= requests; id++) lines.push(JSON.stringify({ op: "stats", token, id }));
    client.write(`${lines.join("\n")}\n`);
    // The answers are past the bound: each waits for the client, all behind one listener.
    await waitFor(() => session !== undefined && session.bufferedBytes > MAX_BUFFERED_ANSWER_BYTES && session.pending > 2, {
      what: "answers to wait for the client",
    });
    expect(serverSide!.listenerCount("drain")).toBe(1);
    let received = 0;
    const reading = new Watch();
    client.on("data", (chunk: Buffer) => {
      for (const byte of chunk) if (byte === 10) received += 1;
      reading.changed();
    });
    client.resume();
    await reading.until(() => received === requests + 1, { what: `${requests + 1} answers`, detail: () => `${received} came` });
    await waitFor(() => session!.pending === 0, { what: "every pipelining slot to be freed" });
    expect(serverSide!.listenerCount("drain")).toBe(1);
  });

  it("a daemon client connection sending to a daemon that does not read", async () => {
    const token = "k".repeat(32);
    let serverSide: Socket | undefined;
    const server = createServer((socket) => {
      serverSide = socket;
      // Answers the hello with its proof, then reads nothing more.
      socket.once("data", (chunk: Buffer) => {
        socket.pause();
        const hello = JSON.parse(chunk.toString("utf8").split("\n")[0]!) as { nonce: string };
        const nonce = newNonce();
        socket.write(`${JSON.stringify({ id: 0, ok: true, nonce, proof: daemonProof(token, hello.nonce, nonce, address) })}\n`);
      });
    });
    await listen(server);
    cleanups.push(() => closeServer(server));
    const { host, port } = addressOf(server);
    const address = `${host}:${port}`;
    const connection = await ClientConnection.connect({ address, token }, { timeoutMs: 10_000 });
    cleanups.push(() => connection.close());
    const padding = "p".repeat(64 * 1024);
    const calls: Promise<unknown>[] = [];
    for (let i = 0; i < 200; i++) {
      calls.push(connection.request({ op: "call_tool", token, server: "s", tool: "t", args: { padding } }, { timeoutMs: 60_000 }).catch(() => undefined));
    }
    const socket = connection["socket"];
    expect(socket.listenerCount("drain")).toBe(1);
    // 12.8 MB in one tick: the kernel's buffers cannot take it all while the daemon does not read.
    await waitFor(() => socket.writableLength > 0, { what: "the socket to push back" });
    expect(socket.listenerCount("drain")).toBe(1);
    // The daemon reads again: every request arrives, whole and in order.
    let text = "";
    serverSide!.setEncoding("utf8");
    serverSide!.on("data", (chunk: string) => (text += chunk));
    const arrived = (): number => text.split("\n").length - 1;
    serverSide!.resume();
    await waitFor(() => arrived() === 200, { what: "200 requests to arrive", detail: () => `${arrived()} came` });
    const ids = text
      .split("\n")
      .filter(Boolean)
      .map((l) => (JSON.parse(l) as { id: number }).id);
    expect(ids).toEqual(Array.from({ length: 200 }, (_, i) => i + 1));
    connection.close();
    await Promise.all(calls);
  });
});

/** The connections each test server accepted, destroyed when it closes. */
const accepted = new WeakMap<Server, Socket[]>();

function listen(server: Server): Promise<void> {
  const sockets: Socket[] = [];
  accepted.set(server, sockets);
  server.on("connection", (socket) => sockets.push(socket));
  return new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
}

function addressOf(server: Server): { host: string; port: number } {
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("the server listens on no TCP port");
  return { host: "127.0.0.1", port: address.port };
}

/** Closes `server` and the connections it accepted. */
function closeServer(server: Server): Promise<void> {
  for (const socket of accepted.get(server) ?? []) socket.destroy();
  return new Promise((resolve) => server.close(() => resolve()));
}
