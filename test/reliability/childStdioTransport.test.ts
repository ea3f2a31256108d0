/**
 * The upstream stdio transport's bounded reading: any chunking yields the same lines, a line over
 * the cap is dropped as it streams in (its two ends kept), the dropped line's request fails with
 * "result over N bytes" while the connection and the process survive. Writing to a server that
 * stops reading: one queue behind one drain listener however many requests wait, bounded in bytes
 * (past it a send fails with UPSTREAM_BUSY), and a message with no JSON form fails only its send.
 */
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { AbridgeError, ErrorCode } from "../../src/model/errors.js";
import { ChildStdioTransport, responseIdOfDroppedLine } from "../../src/upstream/process/childStdioTransport.js";
import { BoundedLineReader } from "../../src/util/boundedLineReader.js";
import { alivePids, fixtureCommand, killAll } from "../helpers/processes.js";
import { Watch } from "../helpers/waitFor.js";

const pids: number[] = [];
const clients: Client[] = [];
afterEach(async () => {
  await Promise.allSettled(clients.splice(0).map((c) => c.close()));
  const left = alivePids(pids.splice(0));
  killAll(left);
  expect(left, "child processes left behind").toEqual([]);
});

/** Cuts `bytes` at the given points (sorted, deduplicated, in range). */
function cut(bytes: Buffer, points: number[]): Buffer[] {
  const at = [...new Set(points.map((p) => p % (bytes.length + 1)))].sort((a, b) => a - b);
  const pieces: Buffer[] = [];
  let from = 0;
  for (const p of [...at, bytes.length]) {
    pieces.push(bytes.subarray(from, p));
    from = p;
  }
  return pieces;
}

describe("BoundedLineReader", () => {
  it("any chunking yields the same lines and drops exactly the lines over the bound", () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.string({ maxLength: 40 }).map((s) => s.replaceAll("\n", "")),
          { maxLength: 12 },
        ),
        fc.array(fc.nat(), { maxLength: 20 }),
        (lines, points) => {
          const max = 20;
          const reader = new BoundedLineReader(max);
          const events = cut(Buffer.from(lines.map((l) => `${l}\n`).join(""), "utf8"), points).flatMap((piece) => {
            const out = reader.push(piece);
            expect(reader.bufferedBytes).toBeLessThanOrEqual(max);
            return out;
          });
          const expected = lines.map((l) => {
            const bytes = Buffer.byteLength(l);
            return bytes > max ? { dropped: bytes } : { line: l.endsWith("\r") ? l.slice(0, -1) : l };
          });
          expect(events.map((e) => ("dropped" in e ? { dropped: e.dropped.bytes } : e))).toEqual(expected);
        },
      ),
    );
  });

  it("keeps the first and last 4 KiB of a dropped line, not the line", () => {
    const reader = new BoundedLineReader(10_000);
    const line = `HEAD${"m".repeat(100_000)}TAIL`;
    const events = [];
    for (let i = 0; i < line.length; i += 1000) {
      events.push(...reader.push(Buffer.from(line.slice(i, i + 1000))));
      expect(reader.bufferedBytes).toBeLessThanOrEqual(10_000);
    }
    events.push(...reader.push(Buffer.from("\nnext\n")));
    expect(events).toHaveLength(2);
    const dropped = (events[0] as { dropped: { bytes: number; head: string; tail: string } }).dropped;
    expect(dropped.bytes).toBe(line.length);
    expect(dropped.head).toBe(line.slice(0, 4096));
    expect(dropped.tail).toBe(line.slice(-4096));
    expect(events[1]).toEqual({ line: "next" });
  });
});

describe("responseIdOfDroppedLine", () => {
  const of = (line: string) => responseIdOfDroppedLine({ bytes: line.length, head: line.slice(0, 4096), tail: line.slice(-4096) });
  it("reads the id of a response, wherever the serializer put it", () => {
    expect(of(`{"result":{"content":[{"type":"text","text":"${"x".repeat(9000)}"}]},"jsonrpc":"2.0","id":7}`)).toBe(7);
    expect(of(`{"jsonrpc":"2.0","id":"req \\"7\\"","result":{"content":[{"type":"text","text":"${"x".repeat(9000)}"}]}}`)).toBe('req "7"');
    expect(of(`{"jsonrpc":"2.0","error":{"code":-1,"message":"${"x".repeat(9000)}"},"id":3}`)).toBe(3);
  });
  it("finds none in a request or notification from the server, or a nested id", () => {
    expect(of(`{"method":"sampling/createMessage","params":{"x":"${"x".repeat(9000)}"},"jsonrpc":"2.0","id":3}`)).toBeUndefined();
    expect(of(`{"method":"notifications/message","params":{"data":"${"x".repeat(9000)}"},"jsonrpc":"2.0"}`)).toBeUndefined();
    expect(of(`{"result":{"items":[{"id":5}]},"jsonrpc":"2.0"}`)).toBeUndefined();
  });
});

describe("ChildStdioTransport", () => {
  it("a result over the cap fails its request with 'result over N bytes'; the same process answers the next", async () => {
    const cap = 1024 * 1024;
    const transport = new ChildStdioTransport({ ...fixtureCommand("hugeOutputServer.ts"), stderr: "pipe", maxMessageBytes: cap });
    (transport.stderr as NodeJS.ReadableStream).resume();
    const errors: string[] = [];
    const client = new Client({ name: "cap-test", version: "1" });
    client.onerror = (e) => errors.push(e.message);
    clients.push(client);
    await client.connect(transport);
    const pid = transport.childPid!;
    pids.push(pid);
    await expect(client.callTool({ name: "huge", arguments: { mb: 3 } })).rejects.toThrow(`result over ${cap} bytes`);
    expect(errors.join("\n")).toMatch(/dropped a message of \d+ bytes from the server: over the 1048576-byte limit/);
    // Under the cap is read whole; the connection and process are the same.
    const below = await client.callTool({ name: "huge", arguments: { mb: 0.5 } });
    expect((below.content as { text: string }[]).map((b) => b.text).join("")).toHaveLength(512 * 1024);
    expect(await client.callTool({ name: "small", arguments: {} })).toMatchObject({ content: [{ type: "text", text: "small" }] });
    expect(transport.childPid).toBe(pid);
    await client.close();
    expect(alivePids([pid])).toEqual([]);
  });
});

/** A transport to the raw echo fixture with its `stall` tool, its answers and stderr followed. */
async function stallingServer(params: { maxQueuedBytes?: number } = {}) {
  const transport = new ChildStdioTransport({ ...fixtureCommand("rawEchoServer.ts", ["--stall"]), stderr: "pipe", ...params });
  let stderr = "";
  const answered = new Map<number, JSONRPCMessage>();
  const watch = new Watch();
  const changed = (): void => watch.changed();
  transport.stderr!.on("data", (b: Buffer) => {
    stderr += b.toString("utf8");
    changed();
  });
  transport.onmessage = (message) => {
    if ("id" in message && typeof message.id === "number") answered.set(message.id, message);
    changed();
  };
  /** Resolves once `check` holds, checked at every answer and stderr line. */
  const until = (check: () => boolean, what: string): Promise<void> => watch.until(check, { what, detail: () => `stderr so far: ${stderr.slice(-2000)}` });
  await transport.start();
  pids.push(transport.childPid!);
  const call = (id: number, name: string, args: Record<string, unknown>): Promise<void> =>
    transport.send({ jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: args } });
  return { transport, answered, until, call, stderr: () => stderr };
}

describe("ChildStdioTransport writing to a server that stops reading", () => {
  it("keeps one drain listener on the child's stdin while thousands of requests wait, and delivers them all once it reads again", async () => {
    const { transport, answered, until, call, stderr } = await stallingServer();
    void call(0, "stall", {});
    await until(() => stderr().includes("stalled"), "the server to report that it stalled");
    const stdin = transport.stdin!;
    const text = "x".repeat(1024);
    const calls = 5_000;
    let mostListeners = 0;
    const sent: Promise<void>[] = [];
    for (let id = 1; id <= calls; id++) {
      // Not awaited, as the SDK does not await a request's send: every call waits at once.
      sent.push(call(id, "echo", { text: `${id} ${text}` }));
      mostListeners = Math.max(mostListeners, stdin.listenerCount("drain"));
    }
    expect(mostListeners).toBeLessThanOrEqual(1);
    // 5 MB cannot fit in a pipe: most of it waits in abridge, behind that one listener.
    expect(transport.queuedBytes).toBeGreaterThan(1024 * 1024);
    await Promise.all(sent);
    process.kill(transport.childPid!, "SIGUSR2");
    await until(() => answered.size === calls + 1, "every call answered");
    for (let id = 1; id <= calls; id++) {
      expect((answered.get(id) as { result?: { content: { text: string }[] } }).result?.content[0]?.text).toBe(`${id} ${text}`);
    }
    expect(transport.queuedBytes).toBe(0);
    expect(stdin.listenerCount("drain")).toBeLessThanOrEqual(1);
    await transport.close();
  });

  it("past maxQueuedBytes a send fails with UPSTREAM_BUSY (retryable) and writes nothing; the rest is delivered and the process stays", async () => {
    const limit = 256 * 1024;
    const { transport, answered, until, call, stderr } = await stallingServer({ maxQueuedBytes: limit });
    const pid = transport.childPid!;
    void call(0, "stall", {});
    await until(() => stderr().includes("stalled"), "the server to report that it stalled");
    const text = "y".repeat(1024);
    const outcomes = await Promise.allSettled(Array.from({ length: 2_000 }, (_, i) => call(i + 1, "echo", { text })));
    const refused = outcomes.flatMap((o, i) => (o.status === "rejected" ? [{ id: i + 1, error: o.reason as AbridgeError }] : []));
    const accepted = outcomes.flatMap((o, i) => (o.status === "fulfilled" ? [i + 1] : []));
    expect(refused.length).toBeGreaterThan(0);
    expect(accepted.length).toBeGreaterThan(0);
    for (const { error } of refused) {
      expect(error).toBeInstanceOf(AbridgeError);
      expect(error.code).toBe(ErrorCode.UPSTREAM_BUSY);
      expect(error.retryable).toBe(true);
    }
    // The bound holds to within one line.
    expect(transport.queuedBytes).toBeLessThanOrEqual(limit + text.length + 200);
    expect(transport.backlogged).toBe(true);
    process.kill(pid, "SIGUSR2");
    await until(() => answered.size === accepted.length + 1, "every accepted call answered");
    expect([...answered.keys()].sort((a, b) => a - b)).toEqual([0, ...accepted]);
    expect(transport.backlogged).toBe(false);
    await call(9_999, "echo", { text: "after" });
    await until(() => answered.has(9_999), "the answer to call 9999");
    expect(transport.childPid).toBe(pid);
    expect(transport.pid).toBe(pid);
    await transport.close();
  });

  it("a message with no JSON form (a BigInt, a cycle) fails that send with INPUT_INVALID; the connection goes on", async () => {
    const { transport, answered, until, call } = await stallingServer();
    const pid = transport.childPid!;
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    for (const args of [{ n: 10n }, cyclic]) {
      const error = (await call(1, "echo", args).catch((err: unknown) => err)) as AbridgeError;
      expect(error).toBeInstanceOf(AbridgeError);
      expect(error.code).toBe(ErrorCode.INPUT_INVALID);
      expect(error.message).toMatch(/cannot be written as JSON/);
    }
    await call(2, "echo", { text: "still here" });
    await until(() => answered.has(2), "the answer to call 2");
    expect((answered.get(2) as { result?: { content: { text: string }[] } }).result?.content[0]?.text).toBe("still here");
    expect(answered.has(1)).toBe(false);
    expect(transport.pid).toBe(pid);
    await transport.close();
  });
});
