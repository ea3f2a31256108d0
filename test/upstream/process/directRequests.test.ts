/**
 * Requests written past the SDK client on a real stdio child (test/fixtures/rawEchoServer.ts, or
 * a small line server of this file's own): answers matched by id beside the SDK client's own
 * requests on the same pipe, error answers as the SDK's McpError, a cancel that tells the server
 * and fails the request at once, the end of the process failing what waits, an answer of another
 * shape left to the SDK's parsing, and a dropped over-long answer failing only its request.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { ErrorCode as RpcCode, McpError, type JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { afterEach, describe, expect, it } from "vitest";
import { ChildStdioTransport } from "../../../src/upstream/process/childStdioTransport.js";
import { DIRECT_ID_FIRST } from "../../../src/upstream/process/directRequests.js";
import { alivePids, fixtureCommand, killAll } from "../../helpers/processes.js";
import { Watch } from "../../helpers/waitFor.js";

/** The lines a child writes to stderr, and a wait for one that matches. */
class StderrLines {
  readonly lines: string[] = [];
  private readonly watch = new Watch();
  private rest = "";

  constructor(stream: NodeJS.ReadableStream) {
    stream.on("data", (chunk: Buffer) => {
      const parts = (this.rest + chunk.toString("utf8")).split("\n");
      this.rest = parts.pop() ?? "";
      this.lines.push(...parts);
      this.watch.changed();
    });
  }

  /** The first line `match` accepts, once there is one. */
  async until(match: string | ((line: string) => boolean)): Promise<string> {
    const test = typeof match === "string" ? (l: string) => l.includes(match) : match;
    await this.watch.until(() => this.lines.some(test), { what: `a stderr line ${String(match)}`, detail: () => this.lines.join("\n") });
    return this.lines.find(test)!;
  }
}

const transports: ChildStdioTransport[] = [];
afterEach(async () => {
  const pids = transports.map((t) => t.childPid).filter((p): p is number => p !== undefined);
  await Promise.allSettled(transports.splice(0).map((t) => t.close({ stdinMs: 2_000, sigtermMs: 2_000 })));
  const left = alivePids(pids);
  killAll(left);
  expect(left, "child processes left behind").toEqual([]);
});

/**
 * A line server in plain node: it writes every line it reads to stderr (so a test sees what
 * reached it), and answers a request by its method: `echo` with its params, `fail` with an error
 * carrying data, `odd` with a result that is not an object, `as-text-id` with its id as a string,
 * `big` with a line of `params.bytes` characters; `hold` gets no answer.
 */
const LINE_SERVER = `
const rl = require("node:readline").createInterface({ input: process.stdin });
const out = (m) => process.stdout.write(JSON.stringify(m) + "\\n");
rl.on("line", (line) => {
  process.stderr.write("got " + line + "\\n");
  const m = JSON.parse(line);
  if (m.id === undefined) return;
  switch (m.method) {
    case "echo": return out({ jsonrpc: "2.0", id: m.id, result: { echoed: m.params } });
    case "fail": return out({ jsonrpc: "2.0", id: m.id, error: { code: -32050, message: "no quota", data: { left: 0 } } });
    case "odd": return out({ jsonrpc: "2.0", id: m.id, result: 5 });
    case "as-text-id": return out({ jsonrpc: "2.0", id: String(m.id), result: { text: true } });
    case "big": return out({ jsonrpc: "2.0", id: m.id, result: { text: "x".repeat(m.params.bytes) } });
    case "hold": return;
  }
});
process.stderr.write("line server ready\\n");
`;

async function lineServer(options: { maxMessageBytes?: number } = {}): Promise<{ transport: ChildStdioTransport; stderr: StderrLines }> {
  const transport = new ChildStdioTransport({
    command: process.execPath,
    args: ["-e", LINE_SERVER],
    stderr: "pipe",
    ...(options.maxMessageBytes !== undefined ? { maxMessageBytes: options.maxMessageBytes } : {}),
  });
  transports.push(transport);
  const stderr = new StderrLines(transport.stderr!);
  await transport.start();
  await stderr.until("line server ready");
  return { transport, stderr };
}

/** What reached the line server, parsed, from its "got" lines so far. */
function received(stderr: StderrLines): JSONRPCMessage[] {
  return stderr.lines.filter((l) => l.startsWith("got ")).map((l) => JSON.parse(l.slice(4)) as JSONRPCMessage);
}

describe("direct requests on a stdio child", () => {
  it("matches answers by id beside the SDK client's own requests on the same pipe", async () => {
    const { command, args } = fixtureCommand("rawEchoServer.ts");
    const transport = new ChildStdioTransport({ command, args, stderr: "pipe" });
    transports.push(transport);
    const client = new Client({ name: "direct-test", version: "1.0.0" });
    await client.connect(transport);
    const calls = Array.from({ length: 20 }, (_, i) => transport.direct.send("tools/call", { name: "echo", arguments: { text: `call ${i}` } }).answer);
    const [results, listed] = await Promise.all([Promise.all(calls), client.listTools()]);
    expect(results.map((r) => (r.content as { text: string }[])[0]!.text)).toEqual(Array.from({ length: 20 }, (_, i) => `call ${i}`));
    expect(listed.tools.map((t) => t.name)).toEqual(["echo"]);
    expect(transport.direct.size).toBe(0);
    await client.close();
  });

  it("gives an error answer as the SDK's McpError, and takes an id sent back as text", async () => {
    const { transport, stderr } = await lineServer();
    const failed = await transport.direct.send("fail", {}).answer.catch((err: unknown) => err);
    expect(failed).toBeInstanceOf(McpError);
    expect(failed).toMatchObject({ code: -32050, data: { left: 0 } });
    expect((failed as McpError).message).toContain("no quota");
    await expect(transport.direct.send("as-text-id", {}).answer).resolves.toEqual({ text: true });
    await expect(transport.direct.send("echo", { a: 1 }).answer).resolves.toEqual({ echoed: { a: 1 } });
    const ids = received(stderr).map((m) => (m as { id?: unknown }).id);
    expect(ids.every((id) => typeof id === "number" && id >= DIRECT_ID_FIRST && id < 2 ** 31)).toBe(true);
  });

  it("cancel tells the server with notifications/cancelled and fails the request with the reason at once", async () => {
    const { transport, stderr } = await lineServer();
    const call = transport.direct.send("hold", {});
    await stderr.until((l) => l.includes('"method":"hold"'));
    const reason = new McpError(RpcCode.RequestTimeout, "no answer within 10 ms");
    call.cancel(reason);
    await expect(call.answer).rejects.toBe(reason);
    const cancelled = await stderr.until((l) => l.includes("notifications/cancelled"));
    const sent = received(stderr).find((m) => (m as { method?: string }).method === "hold") as { id: number };
    expect(JSON.parse(cancelled.slice(4))).toEqual({
      jsonrpc: "2.0",
      method: "notifications/cancelled",
      params: { requestId: sent.id, reason: String(reason) },
    });
    // A reason that is not an McpError is wrapped in one, as the SDK client does.
    const other = transport.direct.send("hold", {});
    other.cancel("gave up");
    await expect(other.answer).rejects.toMatchObject({ code: RpcCode.RequestTimeout, message: expect.stringContaining("gave up") });
    // Once answered, a cancel does nothing.
    const done = transport.direct.send("echo", { b: 2 });
    await done.answer;
    done.cancel("late");
    await expect(transport.direct.send("echo", { c: 3 }).answer).resolves.toEqual({ echoed: { c: 3 } });
    expect(received(stderr).filter((m) => (m as { method?: string }).method === "notifications/cancelled")).toHaveLength(2);
  });

  it("fails every waiting request with ConnectionClosed when the process ends, and refuses new ones", async () => {
    const { transport, stderr } = await lineServer();
    const waiting = [transport.direct.send("hold", {}).answer, transport.direct.send("hold", {}).answer];
    await stderr.until(() => received(stderr).length === 2);
    process.kill(transport.childPid!, "SIGKILL");
    for (const answer of waiting)
      await expect(answer).rejects.toMatchObject({ code: RpcCode.ConnectionClosed, message: expect.stringContaining("Connection closed") });
    await expect(transport.direct.send("echo", {}).answer).rejects.toThrow("Not connected");
  });

  it("leaves an answer of another shape to the SDK's parsing, and fails only the request whose answer is over the bound", async () => {
    const { transport } = await lineServer({ maxMessageBytes: 1_000 });
    const seen: JSONRPCMessage[] = [];
    const errors: Error[] = [];
    transport.onmessage = (m) => seen.push(m);
    transport.onerror = (e) => errors.push(e);
    const odd = transport.direct.send("odd", {});
    // The answer `{result: 5}` is no direct answer: it goes on to the SDK's parsing, which refuses it.
    const after = await transport.direct.send("echo", { n: 1 }).answer;
    expect(after).toEqual({ echoed: { n: 1 } });
    expect(errors.length).toBeGreaterThan(0);
    expect(transport.direct.size).toBe(1);
    odd.cancel("done waiting");
    await expect(odd.answer).rejects.toBeInstanceOf(McpError);
    const big = await transport.direct.send("big", { bytes: 5_000 }).answer.catch((err: unknown) => err);
    expect(big).toBeInstanceOf(McpError);
    expect((big as McpError).message).toMatch(/result over 1000 bytes/);
    await expect(transport.direct.send("echo", { n: 2 }).answer).resolves.toEqual({ echoed: { n: 2 } });
    expect(seen).toEqual([]);
  });
});
