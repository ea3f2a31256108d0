/**
 * The daemon's side of the typed protocol: every answer a real daemon writes (fixture upstreams,
 * a real socket) is what src/daemon/wire/protocol.ts says for its op, the schema keeps every field of it
 * (a field the daemon sends and the schema does not know would be dropped by clients), and the
 * key order of the lines is the one the protocol has always had.
 */
import { describe, expect, it } from "vitest";
import { parseAnswer, type DaemonOp } from "../../../src/daemon/wire/protocol.js";
import { RawClient, startDaemon, testSetup } from "../daemonHarness.js";

describe("answers of a real daemon", () => {
  it("match their op's schema, lose no field to it, and keep id, ok (and code, message, retryable) in order", async () => {
    const setup = await testSetup();
    const daemon = await startDaemon(setup);
    const client = await RawClient.connect(daemon.address);
    const token = daemon.token;
    let id = 0;
    const ask = async (op: DaemonOp, fields: Record<string, unknown> = {}): Promise<Record<string, unknown>> => {
      id += 1;
      const answer = await client.request({ token, op, ...fields, id });
      expect(Object.keys(answer).slice(0, 2)).toEqual(["id", "ok"]);
      expect(answer.id).toBe(id);
      expect(parseAnswer(op, answer)).toEqual(answer);
      if (answer.ok === false) expect(Object.keys(answer.error as object)).toEqual(["code", "message", "retryable"]);
      return answer;
    };

    for (const mode of ["full", "summary", "compact", "lazy", "auto"]) {
      const list = await ask("list_tools", { mode });
      expect((list.tools as unknown[]).length).toBe(5);
    }
    expect(await ask("call_tool", { server: "echo", tool: "echo", args: { text: "hi" } })).toMatchObject({ ok: true, result: { content: [{ text: "hi" }] } });
    expect(await ask("call_tool", { server: "echo", tool: "add", args: { a: "x" } })).toMatchObject({ ok: true, result: { isError: true } });
    expect(await ask("call_tool", { server: "echo", tool: "nope" })).toMatchObject({ ok: false, error: { code: "TOOL_NOT_FOUND" } });
    expect(await ask("get_schema", { server: "echo", tool: "add" })).toMatchObject({ ok: true, schema: { uri: "mcp://echo/add" } });
    expect(await ask("read_output", { handle: "nothing-spilled" })).toMatchObject({ ok: true, result: { isError: true } });
    expect(await ask("call_tool", { server: "echo", tool: "echo", argz: {} })).toMatchObject({ ok: false, error: { code: "DAEMON_BAD_REQUEST" } });
    const stats = await ask("stats");
    expect(stats.stats).toMatchObject({ pid: daemon.info.pid, catalog: { tools: 5 }, daemon: { requests: expect.any(Number) } });
    expect(await ask("refresh")).toMatchObject({ ok: true, discovery: expect.arrayContaining([expect.objectContaining({ server: "echo" })]) });
    // Last: the daemon stops after answering it.
    expect(await ask("shutdown")).toEqual({ id, ok: true });
    await daemon.closed;
  });
});
