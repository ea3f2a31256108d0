/**
 * The upstream stdio transport's bounded reading: any chunking yields the same lines, a line over
 * the cap is dropped as it streams in (its two ends kept), the dropped line's request fails with
 * "result over N bytes" while the connection and the process survive.
 */
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { ChildStdioTransport, responseIdOfDroppedLine } from "../../src/upstream/childStdioTransport.js";
import { BoundedLineReader } from "../../src/util/boundedLineReader.js";
import { alivePids, fixtureCommand, killAll } from "../helpers/processes.js";

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
      fc.property(fc.array(fc.string({ maxLength: 40 }).map((s) => s.replaceAll("\n", "")), { maxLength: 12 }), fc.array(fc.nat(), { maxLength: 20 }), (lines, points) => {
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
      }),
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
