/**
 * Hostile programs through the Bridge: what the Bridge adds around the runtime (whose own hostile
 * cases are in test/code/runtime/hostileProgram.test.ts). Calls past a run's deadline never reach the
 * upstream; a denied tool named through tools.call is refused and audited with the run; a 100 MB
 * result is refused to the program while the bridge serves on; runs of several callers at once
 * stay apart; a looping program does not keep the bridge from answering a direct call.
 */
import { readFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { defaultCodePool } from "../../src/code/runtime/workerPool.js";
import { ErrorCode } from "../../src/model/errors.js";
import type { CallToolResult } from "../../src/model/types.js";
import { fixtureToml, startBridge } from "../policy/bridgeHarness.js";
import { waitFor } from "../helpers/waitFor.js";

function text(result: CallToolResult): string {
  return (result.content as { type: string; text?: string }[]).map((b) => b.text ?? "").join("\n");
}

describe("hostile programs through the Bridge", () => {
  it("a program that keeps calling after its timeout: no call past the deadline reaches the upstream", async () => {
    const { bridge } = await startBridge(`mode = "code"\n${fixtureToml("ann", "annotatedServer.ts")}`);
    // A first run starts the program threads, so the loop's time is spent calling.
    expect((await bridge.runCode("return await ann.count({});")).result.returnJson).toBe("1");
    // Calls in a loop that swallows every error, so only the deadline can stop it.
    const run = await bridge.runCode("for (;;) { try { await ann.count({}); } catch (e) {} }", { limits: { timeout_ms: 2_000 } });
    expect(run.result.error?.code).toBe(ErrorCode.CODE_TIMEOUT);
    const made = run.result.calls.length;
    expect(made).toBeGreaterThan(0);
    // The fixture counts every call it received: the first run's, the loop's (at most those the
    // run recorded) and this one. A second direct call is the barrier: nothing of the loop
    // arrived in between.
    const seen = Number(text(await bridge.callTool("ann_count", {})));
    expect(seen).toBeLessThanOrEqual(1 + made + 1);
    expect(Number(text(await bridge.callTool("ann_count", {})))).toBe(seen + 1);
  });

  it("a denied tool named through tools.call is refused in the program and audited as refused with the run's id", async () => {
    const { bridge, dir } = await startBridge(
      `mode = "code"\naudit_log = "{dir}/audit.jsonl"\n${fixtureToml("ann", "annotatedServer.ts", [], ['deny = ["delete_file"]'])}`,
    );
    const run = await bridge.runCode(
      'try { await tools.call("ann_delete_file", { path: "/etc/passwd" }); return "ran"; } catch (e) { return [e.code, e.tool]; }',
      { runId: "hostile-deny" },
    );
    expect(run.result.ok).toBe(true);
    const [code, tool] = JSON.parse(run.result.returnJson ?? "null") as [string, string];
    expect(code).toBe(ErrorCode.TOOL_REFUSED);
    expect(tool).toBe("ann_delete_file");
    const file = path.join(dir, "audit.jsonl");
    await waitFor(async () => (await readFile(file, "utf8").catch(() => "")).includes('"run":"hostile-deny"'), { what: "the refused call in the audit log" });
    const records = (await readFile(file, "utf8"))
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(records.filter((r) => r.run === "hostile-deny")).toEqual([
      expect.objectContaining({ tool: "delete_file", outcome: "refused", program: expect.stringMatching(/^sha256:/) }),
    ]);
  });

  it("a 100 MB tool result: the program gets OUTPUT_LIMIT, and the bridge and the server serve on", async () => {
    const { bridge } = await startBridge(`mode = "code"\n${fixtureToml("huge", "hugeOutputServer.ts")}`);
    const run = await bridge.runCode("try { await huge.huge({ mb: 100 }); return 'given'; } catch (e) { return e.code; }");
    expect(run.result.returnJson).toBe(JSON.stringify(ErrorCode.OUTPUT_LIMIT));
    expect(text(await bridge.callTool("huge_small", {}, { mode: "full" }))).toBe("small");
    const again = await bridge.runCode("return await huge.small({});");
    expect(again.result.returnJson).toBe('"small"');
    expect(bridge.servers()[0]).toMatchObject({ state: "ready", restarts: 0 });
  });

  it("runs of several callers at once each get their own console, return value, calls and run id", async () => {
    const { bridge } = await startBridge(`mode = "code"\n${fixtureToml("echo", "echoServer.ts", ["--tools", "2"])}`);
    const callers = ["alpha", "beta", "gamma", "delta", "epsilon"];
    const runs = await Promise.all(
      callers.map((name, i) =>
        bridge.runCode(
          `console.log("I am ${name}"); const r = await echo.add({ a: ${i}, b: 100 }); globalThis.mine = "${name}"; return [r.sum, globalThis.mine];`,
          { client: name },
        ),
      ),
    );
    runs.forEach(({ result }, i) => {
      expect(result.ok).toBe(true);
      expect(result.console).toEqual([{ level: "log", text: `I am ${callers[i]}` }]);
      expect(result.returnJson).toBe(JSON.stringify([100 + i, callers[i]]));
      expect(result.calls).toHaveLength(1);
    });
    expect(new Set(runs.map((r) => r.result.runId)).size).toBe(callers.length);
  });

  it("answers a direct call while a program loops, and the loop still ends on cancel", async () => {
    const { bridge } = await startBridge(`mode = "code"\n${fixtureToml("echo", "echoServer.ts", ["--tools", "2"])}`);
    const controller = new AbortController();
    let settled = false;
    const looping = bridge.runCode("for (;;) {}", { signal: controller.signal, limits: { timeout_ms: 120_000 } }).finally(() => (settled = true));
    const direct = await bridge.callTool("echo_echo", { text: "still here" }, { mode: "full" });
    expect(text(direct)).toBe("still here");
    // A second program runs beside the loop once the pool has seen the loop hold its thread (a
    // run placed on that thread before then waits for the loop's deadline: the runtime's rule).
    await waitFor(() => defaultCodePool().stats().held === 1, { what: "the looping program to hold its thread" });
    expect((await bridge.runCode("return 2 + 2;")).result.returnJson).toBe("4");
    expect(settled).toBe(false);
    controller.abort();
    const run = await looping;
    expect(run.result.error?.code).toBe(ErrorCode.CANCELLED);
  });
});
