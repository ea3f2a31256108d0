import { readFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { OBSERVED_MARK } from "../../src/code/declarations/declarations.js";
import { ErrorCode } from "../../src/model/errors.js";
import type { CallToolResult } from "../../src/model/types.js";
import { fixtureToml, startBridge } from "../policy/bridgeHarness.js";

function text(result: CallToolResult): string {
  const block = (result.content as { type: string; text?: string }[])[0];
  return block?.text ?? "";
}

const echoToml = (extra: readonly string[] = []): string => fixtureToml("echo", "echoServer.ts", ["--tools", "2"], extra);

describe("code mode through the Bridge", () => {
  it("lists exactly search_tools and run_code, the same bytes every time", async () => {
    const { bridge } = await startBridge(`mode = "code"\n${echoToml()}`);
    const listed = bridge.list();
    expect(listed.map((t) => t.name)).toEqual(["search_tools", "run_code"]);
    expect(listed[0]?.description).toContain("echo (4 tools)");
    expect(JSON.stringify(bridge.list("code"))).toBe(JSON.stringify(listed));
  });

  it("search_tools answers declarations for a query and for names, and says which names are unknown", async () => {
    const { bridge } = await startBridge(`mode = "code"\n${echoToml()}`);
    const byQuery = text(await bridge.callTool("search_tools", { query: "add two numbers" }));
    expect(byQuery).toContain("declare namespace echo {");
    expect(byQuery).toContain("function add(args: { a: number; b: number }): Promise<{ sum: number }>;");
    const byName = text(await bridge.callTool("search_tools", { names: ["echo_echo", "echo.add", "echo_nothing"] }));
    expect(byName).toContain("function echo(args: { /** Text to echo */ text: string }): Promise<unknown>;");
    expect(byName).toContain("function add(");
    expect(byName).toContain('// no tool is named "echo_nothing"');
    const wrong = await bridge.callTool("search_tools", { names: "echo_echo" });
    expect(wrong.isError).toBe(true);
    expect(text(wrong)).toContain("names must be a non-empty list of strings");
  });

  it("runs a program: console lines in order, then the returned JSON, then the footer; calls are audited with the run", async () => {
    const { bridge, dir } = await startBridge(`mode = "code"\naudit_log = "{dir}/audit.jsonl"\n${echoToml()}`);
    const code =
      'const r = await echo.add({ a: 2, b: 3 });\nconsole.log("sum", r.sum);\nconst e = await tools.call("echo_echo", { text: "hi" });\nreturn { sum: r.sum, e };';
    const answer = await bridge.callTool("run_code", { code });
    expect(answer.isError).toBeUndefined();
    expect(text(answer)).toMatch(/^\[log\] sum 5\n\{"sum":5,"e":"hi"\}\n\(2 calls, \d+ ms\)$/);
    const run = await bridge.runCode(code, { runId: "run-1" });
    expect(run.result.ok).toBe(true);
    expect(run.result.calls.map((c) => c.tool)).toEqual(["echo_add", "echo_echo"]);
    const file = path.join(dir, "audit.jsonl");
    // A call's audit line is written before its result is handed back, so the run's are all there.
    const records = (await readFile(file, "utf8"))
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const ofRun = records.filter((r) => r.run === "run-1");
    expect(ofRun.map((r) => r.tool)).toEqual(["add", "echo"]);
    expect(ofRun[0]?.program).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(ofRun[0]?.client).toBe("code");
  });

  it("declares the shape a result was seen to have, marked as observed, for a tool without an outputSchema", async () => {
    const { bridge, dir } = await startBridge(`mode = "code"\n${echoToml()}`);
    const before = text(await bridge.callTool("search_tools", { names: ["echo_echo"] }));
    expect(before).toContain("Promise<unknown>");
    const run = await bridge.runCode('return await echo.echo({ text: JSON.stringify({ id: 7, tags: ["a"] }) });');
    expect(run.result.returnJson).toBe('{"id":7,"tags":["a"]}');
    const after = text(await bridge.callTool("search_tools", { names: ["echo_echo"] }));
    expect(after).toContain("Promise<{ id: number; tags: string[] }>;");
    expect(after).toContain(OBSERVED_MARK);
    // Kept beside the cache once the bridge closes, for the next bridge.
    await bridge.close();
    const saved = JSON.parse(await readFile(path.join(dir, "cache", "shapes.json"), "utf8")) as { shapes: [string, unknown][] };
    expect(saved.shapes.map(([key]) => key)).toEqual([expect.stringMatching(/^echo:echo:/)]);
  });

  it("gives a program the gates of a direct call: invalid arguments, a refused tool, a meta-tool, an unknown name", async () => {
    const { bridge } = await startBridge(`mode = "code"\n${echoToml()}\n${fixtureToml("ann", "annotatedServer.ts", [], ['destructive = "deny"'])}`);
    const code = `
      const out = [];
      for (const [name, args] of [["echo_add", { a: "x", b: 1 }], ["ann_delete_file", {}], ["run_code", { code: "1" }], ["echo_nope", {}]]) {
        try { await tools.call(name, args); out.push([name, "ok"]); }
        catch (e) { out.push([name, e.code, e.tool]); }
      }
      return out;`;
    const run = await bridge.runCode(code);
    expect(run.result.error).toBeUndefined();
    const out = JSON.parse(run.result.returnJson ?? "null") as [string, string, string][];
    expect(out.map(([name, code]) => [name, code])).toEqual([
      ["echo_add", ErrorCode.TOOL_ERROR],
      ["ann_delete_file", ErrorCode.TOOL_REFUSED],
      ["run_code", ErrorCode.TOOL_NOT_FOUND],
      ["echo_nope", ErrorCode.TOOL_NOT_FOUND],
    ]);
    expect(out.every(([name, , tool]) => tool === name)).toBe(true);
  });

  it("refuses a result over the server's max_output_bytes to a program, and cuts a long answer at the top-level limit", async () => {
    const { bridge } = await startBridge(`mode = "code"\nmax_output_bytes = 4000\n${fixtureToml("ann", "annotatedServer.ts")}`);
    const big = await bridge.runCode("try { await ann.big({ blocks: 1, bytes: 10000 }); return 'no'; } catch (e) { return e.code; }");
    expect(big.result.returnJson).toBe(JSON.stringify(ErrorCode.OUTPUT_LIMIT));
    const long = await bridge.callTool("run_code", { code: 'return "x".repeat(20000);' });
    const answer = text(long);
    expect(Buffer.byteLength(answer)).toBeLessThanOrEqual(4000);
    expect(answer).toMatch(/\[abridge: output cut: \d+ of \d+ bytes left out \(limit 4000\)\.\]\n\(0 calls, \d+ ms\)$/);
  });

  it("answers a failing program with isError and the line and column in the program", async () => {
    const { bridge } = await startBridge(`mode = "code"\n${echoToml()}`);
    const answer = await bridge.callTool("run_code", { code: "const a: number = 1;\nthrow new Error('boom ' + a);" });
    expect(answer.isError).toBe(true);
    expect(text(answer)).toMatch(/^error: .*boom 1.*line 2.*\[CODE_ERROR\]\n\(0 calls, \d+ ms\)$/s);
    const missing = await bridge.callTool("run_code", {});
    expect(missing.isError).toBe(true);
    expect(text(missing)).toContain("run_code needs");
  });
});
