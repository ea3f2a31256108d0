/**
 * abridge's stdio server transport over real streams: a line over the bound is discarded as it
 * streams in and answered -32600 "request too large" with id null, unreadable lines get -32700 /
 * -32600, and the next request is still delivered.
 */
import { PassThrough, Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { StdioServerTransport } from "../../src/serve/stdioServerTransport.js";

/** A started transport on PassThrough streams, with what it delivered and what it answered. */
async function harness(maxLineBytes: number) {
  const stdin = new PassThrough();
  const stdout = new PassThrough();
  const transport = new StdioServerTransport(stdin, stdout, { maxLineBytes });
  const received: JSONRPCMessage[] = [];
  const errors: Error[] = [];
  let closes = 0;
  transport.onmessage = (m) => received.push(m);
  transport.onerror = (e) => errors.push(e);
  transport.onclose = () => (closes += 1);
  let out = "";
  stdout.on("data", (b: Buffer) => (out += b.toString("utf8")));
  await transport.start();
  const answers = (): Record<string, unknown>[] =>
    out
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  const settle = () => new Promise((resolve) => setImmediate(resolve));
  return { stdin, transport, received, errors, answers, settle, closes: () => closes };
}

const request = (id: number, text: string) => ({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "echo", arguments: { text } } });

describe("StdioServerTransport", () => {
  it("answers a line over the bound with -32600 (id null), never delivers it, and serves on", async () => {
    const h = await harness(1024);
    const big = JSON.stringify(request(1, "z".repeat(10_000)));
    // In small chunks, as a pipe delivers it: the bound is hit mid-line.
    for (let i = 0; i < big.length; i += 300) h.stdin.write(big.slice(i, i + 300));
    h.stdin.write("\n");
    h.stdin.write(`${JSON.stringify(request(2, "small"))}\n`);
    await h.settle();
    expect(h.answers()).toEqual([{ jsonrpc: "2.0", id: null, error: { code: -32600, message: expect.stringContaining("request too large") } }]);
    expect(h.received).toEqual([request(2, "small")]);
    expect(h.errors.map((e) => e.message).join()).toContain("over the 1024-byte limit");
    expect(h.closes()).toBe(0);
  });

  it("a line exactly at the bound is delivered", async () => {
    const line = JSON.stringify(request(3, ""));
    const h = await harness(Buffer.byteLength(line));
    h.stdin.write(`${line}\n`);
    await h.settle();
    expect(h.received).toEqual([request(3, "")]);
    expect(h.answers()).toEqual([]);
  });

  it("answers invalid JSON -32700 and non-JSON-RPC -32600, skips blank lines, closes once", async () => {
    const h = await harness(1024);
    h.stdin.write('{not json\n\n{"foo":1}\n');
    h.stdin.write(`${JSON.stringify(request(4, "ok"))}\n`);
    await h.settle();
    expect(h.answers()).toMatchObject([
      { id: null, error: { code: -32700 } },
      { id: null, error: { code: -32600 } },
    ]);
    expect(h.received).toEqual([request(4, "ok")]);
    await h.transport.close();
    await h.transport.close();
    expect(h.closes()).toBe(1);
    await expect(h.transport.send({ jsonrpc: "2.0", id: 5, result: {} })).rejects.toThrow("Not connected");
  });

  it("queues behind one drain listener, drops notifications past the bound (counted), never responses, in order", async () => {
    // A stdout whose reader takes nothing until told to: every write after the first waits.
    const held: (() => void)[] = [];
    const chunks: string[] = [];
    let flowing = false;
    const stdout = new Writable({
      highWaterMark: 16,
      write(chunk: Buffer, _encoding, callback) {
        chunks.push(chunk.toString("utf8"));
        if (flowing) callback();
        else held.push(callback);
      },
    });
    const transport = new StdioServerTransport(new PassThrough(), stdout, { maxQueuedNotifications: 10 });
    await transport.start();
    const notification = (i: number) => ({ jsonrpc: "2.0" as const, method: "notifications/message", params: { level: "info", data: i } });
    const response = (id: number) => ({ jsonrpc: "2.0" as const, id, result: {} });
    for (let i = 0; i < 100_000; i++) {
      await transport.send(notification(i));
      if (i % 10_000 === 0) await transport.send(response(i));
    }
    expect(stdout.listenerCount("drain")).toBe(1);
    expect(transport.queuedMessages).toBe(10 + 10);
    expect(transport.droppedNotifications).toBe(100_000 - 1 - 10);
    flowing = true;
    for (const release of held.splice(0)) release();
    await new Promise((resolve) => setImmediate(resolve));
    const lines = chunks
      .join("")
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { id?: number; params?: { data: number } });
    expect(lines.filter((l) => l.id !== undefined).map((l) => l.id)).toEqual(Array.from({ length: 10 }, (_, i) => i * 10_000));
    const data = lines.filter((l) => l.params !== undefined).map((l) => l.params!.data);
    expect(data).toEqual([...data].sort((a, b) => a - b));
    expect(transport.queuedMessages).toBe(0);
    await transport.close();
  });
});
