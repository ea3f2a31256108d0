/**
 * Answers gathered into one write per turn of the event loop (daemon) and requests gathered the
 * same way (client) keep the protocol's framing and order: many pipelined calls are answered in
 * request order with their own ids, lines split over writes or sharing a chunk are read alike,
 * and an answer still being gathered leaves before the connection is closed.
 */
import { describe, expect, it } from "vitest";
import { DaemonClient } from "../../src/daemon/client/daemonClient.js";
import { daemonRequestSchema, describeIssues } from "../../src/daemon/wire/protocol.js";
import { RawClient, startDaemon, testSetup } from "./daemonHarness.js";

/**
 * Writes `bytes` on `client` so that the daemon (in this process) reads them as a chunk of their
 * own: once they are written, a request on another connection (`witness`) is answered, and the
 * daemon can only have read that request in a turn of its event loop that found these bytes
 * waiting too. So they are read before the next write is made.
 */
async function writeApart(client: RawClient, witness: RawClient, bytes: Buffer | string, token: string): Promise<void> {
  await new Promise<void>((resolve, reject) => client.socket.write(bytes, (err) => (err ? reject(err) : resolve())));
  expect(await witness.request({ op: "stats", token })).toMatchObject({ ok: true });
}

describe("daemon answers gathered per turn of the event loop", () => {
  it("answers 300 pipelined calls sent in one chunk in request order, each with its id, bad ones with the schema's message", async () => {
    const setup = await testSetup();
    const daemon = await startDaemon(setup);
    const client = await RawClient.connect(daemon.address);
    const token = daemon.token;
    const requests: Record<string, unknown>[] = [];
    for (let i = 0; i < 300; i++) {
      if (i % 50 === 7) requests.push({ op: "call_tool", token, id: i, server: "echo", tool: "echo", args: { text: `${i}` }, timeout_ms: 0 });
      else if (i % 50 === 9) requests.push({ op: "call_tool", token, id: `s${i}`, server: "echo", tool: "echo", arguments: {} });
      else requests.push({ op: "call_tool", token, id: i % 2 === 0 ? i : `s${i}`, server: "echo", tool: "echo", args: { text: `text ${i}` } });
    }
    // Past the daemon's 64 open requests per connection: reading pauses and resumes mid-chunk.
    client.send(requests.map((r) => `${JSON.stringify(r)}\n`).join(""));
    for (const request of requests) {
      const answer = await client.next();
      expect(answer?.id).toBe(request.id);
      const expected = daemonRequestSchema.safeParse(request);
      if (expected.success) {
        expect(answer).toMatchObject({ ok: true, result: { content: [{ type: "text", text: (request.args as { text: string }).text }] } });
      } else {
        expect(answer).toMatchObject({
          ok: false,
          error: { code: "DAEMON_BAD_REQUEST", message: `bad request: ${describeIssues(expected.error, "request")}` },
        });
      }
    }
    const stats = await client.request({ op: "stats", token, id: "end" });
    expect(stats).toMatchObject({ id: "end", ok: true, stats: { daemon: { badRequests: 12 } } });
  });

  it("reads a request split over many writes and two requests in one chunk alike", async () => {
    const setup = await testSetup();
    const daemon = await startDaemon(setup);
    const client = await RawClient.connect(daemon.address);
    const witness = await RawClient.connect(daemon.address);
    const token = daemon.token;
    const line = `${JSON.stringify({ token, op: "call_tool", id: "split", server: "echo", tool: "echo", args: { text: "in pieces ✓" } })}\n`;
    // Byte-wise pieces, so the split falls inside the multi-byte character too.
    const bytes = Buffer.from(line, "utf8");
    for (let at = 0; at < bytes.length; at += 7) await writeApart(client, witness, bytes.subarray(at, at + 7), token);
    expect(await client.next()).toMatchObject({ id: "split", ok: true, result: { content: [{ text: "in pieces ✓" }] } });

    const two = [1, 2].map((id) => JSON.stringify({ token, op: "call_tool", id, server: "echo", tool: "echo", args: { text: `two ${id}` } })).join("\n");
    // Two lines and the start of a third in one chunk; the third ends in the next.
    const third = JSON.stringify({ token, op: "stats", id: 3 });
    await writeApart(client, witness, `${two}\n${third.slice(0, 10)}`, token);
    client.send(`${third.slice(10)}\n`);
    expect(await client.next()).toMatchObject({ id: 1, ok: true, result: { content: [{ text: "two 1" }] } });
    expect(await client.next()).toMatchObject({ id: 2, ok: true, result: { content: [{ text: "two 2" }] } });
    expect(await client.next()).toMatchObject({ id: 3, ok: true, stats: { pid: daemon.info.pid } });
  });

  it("writes the calls answered before an unframeable line, then its error, then closes", async () => {
    const setup = await testSetup();
    const daemon = await startDaemon(setup);
    const token = daemon.token;
    const client = await RawClient.connect(daemon.address);
    const calls = [1, 2, 3].map((id) => JSON.stringify({ token, op: "call_tool", id, server: "echo", tool: "echo", args: { text: `before ${id}` } }));
    client.send(`${calls.join("\n")}\n{"op": nope\n${JSON.stringify({ token, op: "stats", id: 4 })}\n`);
    for (const id of [1, 2, 3]) expect(await client.next()).toMatchObject({ id, ok: true, result: { content: [{ text: `before ${id}` }] } });
    expect(await client.next()).toMatchObject({ id: null, ok: false, error: { code: "DAEMON_BAD_REQUEST", message: expect.stringContaining("invalid JSON") } });
    expect(await client.next()).toBeUndefined();
    await client.closed;
  });

  it("answers a shutdown request before it stops, with the answers gathered before it", async () => {
    const setup = await testSetup();
    const daemon = await startDaemon(setup);
    const token = daemon.token;
    const client = await RawClient.connect(daemon.address);
    client.send(
      `${JSON.stringify({ token, op: "call_tool", id: 1, server: "echo", tool: "echo", args: { text: "last" } })}\n${JSON.stringify({ token, op: "shutdown", id: 2 })}\n`,
    );
    expect(await client.next()).toMatchObject({ id: 1, ok: true, result: { content: [{ text: "last" }] } });
    expect(await client.next()).toEqual({ id: 2, ok: true });
    expect(await daemon.closed).toBe("shutdown");
  });
});

describe("the client's requests gathered per turn of the event loop", () => {
  it("answers 64 concurrent calls and 32 concurrent shared-connection requests each with its own result", async () => {
    const setup = await testSetup();
    const daemon = await startDaemon(setup);
    const client = new DaemonClient({ stateDir: setup.stateDir });
    try {
      const texts = Array.from({ length: 64 }, (_, i) => `call ${i}`);
      const results = await Promise.all(texts.map((text) => client.callTool("echo", "echo", { text })));
      expect(results.map((r) => (r.content?.[0] as { text?: string } | undefined)?.text)).toEqual(texts);
      // The read-only requests share one connection: these 32 are pipelined on it.
      const tools = ["echo", "add", "echo", "add"];
      const schemas = await Promise.all(Array.from({ length: 32 }, (_, i) => client.getSchema("echo", tools[i % 4]!)));
      expect(schemas.map((s) => s.uri)).toEqual(Array.from({ length: 32 }, (_, i) => `mcp://echo/${tools[i % 4]!}`));
      const again = await Promise.all(texts.map((text) => client.callTool("echo", "echo", { text: `${text}!` })));
      expect(again.map((r) => (r.content?.[0] as { text?: string } | undefined)?.text)).toEqual(texts.map((t) => `${t}!`));
      expect((await client.stats()).daemon.badRequests).toBe(0);
    } finally {
      client.close();
    }
    await daemon.close({ graceMs: 2_000 });
  });
});
