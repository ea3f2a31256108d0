/**
 * The daemon's `run_code` and `declare_tools` ops: a program run against the daemon's tools over
 * the line protocol, through DaemonClient and raw; a `cancel` (or the client's signal) ends the
 * run and aborts its calls in flight; limits out of bounds are bad requests.
 */
import { describe, expect, it } from "vitest";
import { DaemonClient } from "../../src/daemon/client/daemonClient.js";
import { AbridgeError, ErrorCode } from "../../src/model/errors.js";
import { waitFor } from "../helpers/waitFor.js";
import { RawClient, startDaemon, testSetup } from "./daemonHarness.js";

function client(stateDir: string): DaemonClient {
  return new DaemonClient({ stateDir });
}

describe("the daemon's run_code op", () => {
  it("runs a program through DaemonClient.runCode: the run's result and the answer a model reads", async () => {
    const setup = await testSetup();
    await startDaemon(setup);
    const c = client(setup.stateDir);
    try {
      const code = 'const r = await echo.add({ a: 2, b: 3 });\nconsole.log("sum", r.sum);\nreturn { sum: r.sum };';
      const { result, answer } = await c.runCode(code);
      expect(result).toMatchObject({ ok: true, returnJson: '{"sum":5}', console: [{ level: "log", text: "sum 5" }], calls: [{ tool: "echo_add", ok: true }] });
      expect(answer.isError).toBeUndefined();
      expect((answer.content as { text: string }[])[0]?.text).toMatch(/^\[log\] sum 5\n\{"sum":5\}\n\(1 call, \d+ ms\)$/);
      // A program that fails is a result, not a thrown error.
      const failed = await c.runCode("while (true) {}", { limits: { timeout_ms: 300 } });
      expect(failed.result.ok).toBe(false);
      expect(failed.result.error?.code).toBe(ErrorCode.CODE_TIMEOUT);
      expect(failed.answer.isError).toBe(true);
    } finally {
      c.close();
    }
  });

  it("answers declarations for a query and for names; both or neither is a bad request", async () => {
    const setup = await testSetup();
    await startDaemon(setup);
    const c = client(setup.stateDir);
    try {
      expect(await c.declareTools({ query: "add two numbers" })).toContain("function add(args: { a: number; b: number }): Promise<{ sum: number }>;");
      const named = await c.declareTools({ names: ["echo.echo", "echo_nothing"] });
      expect(named).toContain("declare namespace echo {");
      expect(named).toContain('// no tool is named "echo_nothing"');
      const both = await c.declareTools({ query: "x", names: ["echo_echo"] } as never).catch((err: unknown) => err);
      expect(both).toBeInstanceOf(AbridgeError);
      expect((both as AbridgeError).code).toBe(ErrorCode.DAEMON_BAD_REQUEST);
      expect((both as AbridgeError).message).toContain("exactly one of them");
    } finally {
      c.close();
    }
  });

  it("ends a run on cancel: the answer says CANCELLED, the call in flight is aborted, the connection carries on", async () => {
    const setup = await testSetup();
    const daemon = await startDaemon(setup);
    const token = daemon.token;
    const raw = await RawClient.connect(daemon.address);
    raw.send({ token, op: "options", unordered: true, id: "o" });
    expect(await raw.next()).toEqual({ id: "o", ok: true });
    raw.send({ token, op: "run_code", id: "run", code: 'console.log("before");\nawait slow.sleep({ ms: 30000 });\nreturn "never";' });
    await waitFor(() => daemon.bridge.stats().calls.inFlight === 1, { what: "the program's call at the upstream" });
    raw.send({ token, op: "cancel", id: "c", target: "run" });
    const answers = [await raw.next(), await raw.next()];
    expect(answers).toContainEqual({ id: "c", ok: true, cancelled: true });
    const run = answers.find((a) => (a as { id: string }).id === "run") as {
      ok: boolean;
      run: { ok: boolean; error: { code: string }; console: unknown[] };
      answer: { isError: boolean };
    };
    expect(run.ok).toBe(true);
    expect(run.run.ok).toBe(false);
    expect(run.run.error.code).toBe(ErrorCode.CANCELLED);
    expect(run.run.console).toEqual([{ level: "log", text: "before" }]);
    expect(run.answer.isError).toBe(true);
    await waitFor(() => daemon.bridge.stats().calls.inFlight === 0, { what: "the program's call to be aborted" });
    expect(await raw.request({ token, op: "run_code", id: 2, code: "return 1 + 1" })).toMatchObject({ id: 2, ok: true, run: { ok: true, returnJson: "2" } });
  });

  it("DaemonClient.runCode with an aborted signal rejects CANCELLED and the daemon aborts the run's call", async () => {
    const setup = await testSetup();
    const daemon = await startDaemon(setup);
    const c = client(setup.stateDir);
    try {
      const controller = new AbortController();
      const running = c.runCode("await slow.sleep({ ms: 30000 }); return 1;", { signal: controller.signal }).catch((err: unknown) => err);
      await waitFor(() => daemon.bridge.stats().calls.inFlight === 1, { what: "the program's call at the upstream" });
      controller.abort();
      const err = await running;
      expect(err).toBeInstanceOf(AbridgeError);
      expect((err as AbridgeError).code).toBe(ErrorCode.CANCELLED);
      await waitFor(() => daemon.bridge.stats().calls.inFlight === 0, { what: "the program's call to be aborted" });
      // The client still runs programs after it.
      expect((await c.runCode("return 'again'")).result.returnJson).toBe('"again"');
    } finally {
      c.close();
    }
  });

  it("leaves out the console and return value of a run past half a line; the answer text keeps their head", async () => {
    const setup = await testSetup();
    await startDaemon(setup);
    const c = client(setup.stateDir);
    try {
      // 9 MB of console against the 16 MiB line.
      const { result, answer } = await c.runCode('for (let i = 0; i < 9000; i++) console.log("y".repeat(1000)); return 1;');
      expect(result).toMatchObject({ ok: true, console: [], consoleDropped: 9000, cut: true });
      expect(result.returnJson).toBeUndefined();
      expect((answer.content as { text: string }[])[0]?.text.startsWith(`[log] ${"y".repeat(1000)}\n`)).toBe(true);
      // The connection carries on.
      expect((await c.runCode("return 3")).result.returnJson).toBe("3");
    } finally {
      c.close();
    }
  });

  it("refuses limits out of bounds and a request without code as bad requests", async () => {
    const setup = await testSetup();
    const daemon = await startDaemon(setup);
    const token = daemon.token;
    const raw = await RawClient.connect(daemon.address);
    const tooBig = await raw.request({ token, op: "run_code", id: 1, code: "return 1", limits: { memory_mb: 5000 } });
    expect(tooBig).toMatchObject({ id: 1, ok: false, error: { code: ErrorCode.DAEMON_BAD_REQUEST } });
    expect(JSON.stringify(tooBig)).toContain("limits.memory_mb");
    const typo = await raw.request({ token, op: "run_code", id: 2, code: "return 1", limits: { timeout: 5 } });
    expect(typo).toMatchObject({ id: 2, ok: false, error: { code: ErrorCode.DAEMON_BAD_REQUEST } });
    const noCode = await raw.request({ token, op: "run_code", id: 3 });
    expect(noCode).toMatchObject({ id: 3, ok: false, error: { code: ErrorCode.DAEMON_BAD_REQUEST } });
    expect(JSON.stringify(noCode)).toContain("code");
  });
});
