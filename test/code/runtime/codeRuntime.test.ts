import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { runProgram } from "../../../src/code/runtime/codeRuntime.js";
import { CodeWorkerPool } from "../../../src/code/runtime/workerPool.js";
import { isAbridgeError } from "../../../src/model/errors.js";
import { waitFor } from "../../helpers/waitFor.js";
import { aborted, codeHost, deferred } from "./codeHost.js";

const pool = new CodeWorkerPool();
afterAll(() => pool.close());

describe("runProgram", () => {
  it("runs TypeScript as an async body: console lines in order, tool values as JSON copies, the return value's JSON", async () => {
    const host = codeHost(
      { "my-files": ["list-dir"] },
      {
        "my-files_list-dir": (args) => [
          { id: 1, name: `${String(args.dir)}/a` },
          { id: 2, name: `${String(args.dir)}/b` },
        ],
      },
    );
    const code = [
      "interface Row { id: number; name: string }",
      'console.log("start", 1, { a: [1, 2] }, undefined, null);',
      'const rows = (await my_files.list_dir({ dir: "/tmp" })) as Row[];',
      "console.info(rows.length);",
      'console.warn("careful");',
      'console.error(new TypeError("bad"));',
      "return { names: rows.map((r: Row) => r.name), count: rows.length };",
    ].join("\n");
    const result = await runProgram(code, host, {}, { pool, runId: "run-1" });
    expect(result.error).toBeUndefined();
    expect(result.ok).toBe(true);
    expect(result.console).toEqual([
      { level: "log", text: 'start 1 {"a":[1,2]} undefined null' },
      { level: "info", text: "2" },
      { level: "warn", text: "careful" },
      { level: "error", text: "TypeError: bad" },
    ]);
    expect(result.returnJson).toBe('{"names":["/tmp/a","/tmp/b"],"count":2}');
    expect(result.calls).toEqual([{ tool: "my-files_list-dir", ok: true, ms: expect.any(Number) }]);
    expect(result.runId).toBe("run-1");
    expect(host.calls).toHaveLength(1);
    expect(host.calls[0]).toMatchObject({ exposed: "my-files_list-dir", args: { dir: "/tmp" }, runId: "run-1" });
    expect(result.durationMs).toBeGreaterThan(0);
  });

  it("gives no value for no return or undefined, and JSON for null, numbers and strings", async () => {
    const host = codeHost({}, {});
    const none = await runProgram("const a = 1;", host, {}, { pool });
    expect(none.ok).toBe(true);
    expect(none.returnJson).toBeUndefined();
    expect((await runProgram("return undefined", host, {}, { pool })).returnJson).toBeUndefined();
    expect((await runProgram("return null", host, {}, { pool })).returnJson).toBe("null");
    expect((await runProgram("return 1.5", host, {}, { pool })).returnJson).toBe("1.5");
    expect((await runProgram('return "a\\nb"', host, {}, { pool })).returnJson).toBe('"a\\nb"');
  });

  it("throws a tool error inside the program with code, message and tool, so try/catch works", async () => {
    const host = codeHost(
      { gh: ["create_issue"] },
      {
        gh_create_issue: () => {
          throw Object.assign(new Error("title is required"), { code: "INVALID_ARGUMENTS" });
        },
      },
    );
    const caught = await runProgram(
      "try { await gh.create_issue({}); } catch (e) { return { name: e.name, code: e.code, message: e.message, tool: e.tool, isError: e instanceof Error }; }",
      host,
      {},
      { pool },
    );
    expect(JSON.parse(caught.returnJson!)).toEqual({
      name: "ToolError",
      code: "INVALID_ARGUMENTS",
      message: "title is required",
      tool: "gh_create_issue",
      isError: true,
    });
    expect(caught.calls).toEqual([{ tool: "gh_create_issue", ok: false, code: "INVALID_ARGUMENTS", ms: expect.any(Number) }]);

    const uncaught = await runProgram('const x: number = 1;\n  await gh.create_issue({ title: "" });', host, {}, { pool });
    expect(uncaught.ok).toBe(false);
    expect(uncaught.error).toMatchObject({ code: "CODE_ERROR", line: 2, tool: "gh_create_issue", toolCode: "INVALID_ARGUMENTS" });
    expect(uncaught.error!.message).toMatch(/^ToolError: title is required \[INVALID_ARGUMENTS\] from gh_create_issue \(line 2, column \d+\)$/);
  });

  it("reports an exception at its line and column in the program as written, types and all", async () => {
    const line = "const a: Record<string, number> = {}; const b = (a as any).missing.deeper;";
    const result = await runProgram(`// a comment\n${line}`, codeHost({}, {}), {}, { pool });
    expect(result.error).toMatchObject({ code: "CODE_ERROR", line: 2, column: line.indexOf(".deeper") + 1 });
    expect(result.error!.message).toBe(`TypeError: cannot read property 'deeper' of undefined (line 2, column ${line.indexOf(".deeper") + 1})`);

    const syntax = await runProgram("let ok = 1;\nlet x: = 3;", codeHost({}, {}), {}, { pool });
    expect(syntax.error).toEqual({ code: "CODE_ERROR", message: "SyntaxError: Unexpected token (line 2, column 8)", line: 2, column: 8 });
  });

  it("holds calls past max_concurrent_calls in the runtime until others finish", async () => {
    let active = 0;
    let most = 0;
    const host = codeHost(
      { s: ["work"] },
      {
        s_work: async (args) => {
          active++;
          most = Math.max(most, active);
          await new Promise((resolve) => setImmediate(resolve));
          active--;
          return args.i;
        },
      },
    );
    const result = await runProgram(
      "const out = await Promise.all(Array.from({ length: 20 }, (_, i) => s.work({ i }))); return out;",
      host,
      { max_concurrent_calls: 3 },
      { pool },
    );
    expect(result.returnJson).toBe(JSON.stringify(Array.from({ length: 20 }, (_, i) => i)));
    expect(most).toBe(3);
    expect(host.calls).toHaveLength(20);
  });

  it("refuses calls past max_calls inside the program with CODE_LIMIT", async () => {
    const host = codeHost({ s: ["ping"] }, { s_ping: () => "pong" });
    const result = await runProgram(
      "const codes = []; for (let i = 0; i < 8; i++) { try { await s.ping(); codes.push('ok'); } catch (e) { codes.push(e.code); } } return codes;",
      host,
      { max_calls: 5 },
      { pool },
    );
    expect(JSON.parse(result.returnJson!)).toEqual(["ok", "ok", "ok", "ok", "ok", "CODE_LIMIT", "CODE_LIMIT", "CODE_LIMIT"]);
    expect(result.calls).toHaveLength(5);
    expect(host.calls).toHaveLength(5);
  });

  it("ends a program that waits on a promise nothing will settle", async () => {
    const result = await runProgram("await new Promise(() => {});", codeHost({}, {}), { timeout_ms: 60_000 }, { pool });
    expect(result.error).toMatchObject({ code: "CODE_ERROR", message: expect.stringContaining("nothing will settle") });
  });

  it("ends a run waiting on a slow tool at its timeout, aborting the call through its signal", async () => {
    const host = codeHost({ s: ["slow"] }, { s_slow: (_args, call) => aborted(call.signal).then(() => "late") });
    const result = await runProgram("return await s.slow({});", host, { timeout_ms: 300 }, { pool });
    expect(result.error).toMatchObject({ code: "CODE_TIMEOUT", message: "the program ran past its timeout_ms (300 ms)" });
    expect(host.calls[0]!.signal.aborted).toBe(true);
    expect(isAbridgeError(host.calls[0]!.signal.reason, "CODE_TIMEOUT")).toBe(true);
  });

  it("ends a run when its signal aborts, and aborts its calls", async () => {
    const called = deferred();
    const host = codeHost(
      { s: ["wait"] },
      {
        s_wait: (_args, call) => {
          called.resolve();
          return aborted(call.signal);
        },
      },
    );
    const controller = new AbortController();
    const running = runProgram("await s.wait({});", host, {}, { pool, signal: controller.signal });
    await called.promise;
    controller.abort();
    const result = await running;
    expect(result.error).toMatchObject({ code: "CANCELLED" });
    expect(isAbridgeError(host.calls[0]!.signal.reason, "CANCELLED")).toBe(true);
  });

  it("aborts calls still in flight when the program returns without waiting for them", async () => {
    const host = codeHost({ s: ["slow", "fast"] }, { s_slow: (_args, call) => aborted(call.signal), s_fast: () => 1 });
    const result = await runProgram('s.slow({}); await s.fast({}); return "done";', host, {}, { pool });
    expect(result.returnJson).toBe('"done"');
    await aborted(host.calls[0]!.signal);
    expect(isAbridgeError(host.calls[0]!.signal.reason, "CANCELLED")).toBe(true);
  });

  it("keeps runs apart: each runs in a fresh context, concurrent ones too", async () => {
    const firstWaiting = deferred();
    const release = deferred<string>();
    const host = codeHost(
      { s: ["hold"] },
      {
        s_hold: () => {
          firstWaiting.resolve();
          return release.promise;
        },
      },
    );
    const first = runProgram(
      "globalThis.shared = 'first'; Object.prototype.marked = 1; await s.hold({}); return [globalThis.shared, ({}).marked];",
      host,
      {},
      { pool },
    );
    await firstWaiting.promise;
    const second = await runProgram("return [typeof globalThis.shared, typeof ({}).marked];", host, {}, { pool });
    expect(JSON.parse(second.returnJson!)).toEqual(["undefined", "undefined"]);
    release.resolve("go");
    expect(JSON.parse((await first).returnJson!)).toEqual(["first", 1]);
    const after = await runProgram("return [typeof globalThis.shared, typeof ({}).marked];", host, {}, { pool });
    expect(JSON.parse(after.returnJson!)).toEqual(["undefined", "undefined"]);
  });

  it("ends an endless loop at its timeout while other runs and the event loop go on", async () => {
    const started = deferred();
    const host = codeHost(
      { s: ["started", "echo"] },
      {
        s_started: () => {
          started.resolve();
          return true;
        },
        s_echo: (args) => args,
      },
    );
    const controller = new AbortController();
    let loopDone = false;
    const looping = runProgram("await s.started({});\nwhile (true) {}", host, { timeout_ms: 120_000 }, { pool, signal: controller.signal }).then((r) => {
      loopDone = true;
      return r;
    });
    await started.promise;
    // Once the loop holds its thread, new runs go to another; the main thread is free meanwhile.
    // A thread counts as held once its slice outlasts LONG_SLICE_MS, which no event announces: polled.
    await waitFor(() => pool.stats().held > 0, { what: "the loop to hold its thread", intervalMs: 5 });
    const other = await runProgram("return await s.echo({ v: 1 });", host, {}, { pool });
    expect(other.returnJson).toBe('{"v":1}');
    expect(loopDone).toBe(false);
    controller.abort();
    expect((await looping).error).toMatchObject({ code: "CANCELLED" });

    const timedOut = await runProgram("let i = 0;\nwhile (true) { i++; }", host, { timeout_ms: 300 }, { pool });
    expect(timedOut.error).toMatchObject({ code: "CODE_TIMEOUT" });
    // The pool goes on.
    expect((await runProgram("return 1 + 1;", host, {}, { pool })).returnJson).toBe("2");
  });

  it("ends a memory bomb with CODE_MEMORY, and the next run works", async () => {
    const host = codeHost({}, {});
    for (const bomb of [
      "const keep = []; while (true) keep.push(new Float64Array(100000));",
      "const keep = []; while (true) keep.push('x'.repeat(1 << 20) + keep.length);",
      "const keep = []; while (true) keep.push({ n: keep.length });",
    ]) {
      const result = await runProgram(bomb, host, { memory_mb: 16 }, { pool });
      expect(result.error).toMatchObject({ code: "CODE_MEMORY", message: "the program used more than its memory_mb (16 MiB)" });
    }
    const caught = await runProgram(
      "const keep = []; try { while (true) keep.push(new Float64Array(100000)); } catch (e) { return [keep.length > 0, e.message]; }",
      host,
      { memory_mb: 16 },
      { pool },
    );
    expect(JSON.parse(caught.returnJson!)).toEqual([true, "out of memory"]);
    expect((await runProgram("return [1, 2, 3].length;", host, { memory_mb: 16 }, { pool })).returnJson).toBe("3");
  });

  it("ends deep recursion with CODE_MEMORY", async () => {
    const host = codeHost({}, {});
    const nested = `return ${"[".repeat(20000)}${"]".repeat(20000)};`;
    for (const code of [
      "function f(n: number): number { return f(n + 1) + 1; }\nreturn f(0);",
      'return JSON.parse("[".repeat(100000));',
      'return eval("(".repeat(100000));',
      nested,
    ]) {
      const result = await runProgram(code, host, {}, { pool });
      expect(result.error).toMatchObject({ code: "CODE_MEMORY", message: "the program ran out of stack (recursion or nesting too deep)" });
    }
    expect((await runProgram("function f(n: number): number { return n === 0 ? 0 : f(n - 1) + 1; }\nreturn f(500);", host, {}, { pool })).returnJson).toBe(
      "500",
    );
  });

  it("keeps console output within its bound and counts the lines dropped", async () => {
    const result = await runProgram(
      "const line = 'x'.repeat(1000); for (let i = 0; i < 2000; i++) console.log(line); return 'end';",
      codeHost({}, {}),
      { memory_mb: 4 },
      { pool },
    );
    expect(result.returnJson).toBe('"end"');
    expect(result.console.length).toBeGreaterThan(0);
    expect(result.console.length + result.consoleDropped).toBe(2000);
    expect(result.console.reduce((n, l) => n + l.text.length + 1, 0)).toBeLessThanOrEqual(1024 * 1024);
  });

  it("refuses a program over its size, arguments over the value bound, and invalid limits", async () => {
    const host = codeHost({ s: ["take"] }, { s_take: () => "taken" });
    const big = await runProgram(`return "${"x".repeat(64 * 1024)}";`, host, {}, { pool });
    expect(big.error).toMatchObject({ code: "CODE_LIMIT", message: expect.stringContaining("over the 65536 a program may have") });
    const args = await runProgram(
      "try { await s.take({ blob: 'y'.repeat(2 * 1024 * 1024) }); } catch (e) { return e.code; }",
      host,
      { memory_mb: 4 },
      { pool },
    );
    expect(args.returnJson).toBe('"CODE_LIMIT"');
    expect(host.calls).toHaveLength(0);
    await expect(runProgram("return 1", host, { timeout_ms: 0 })).rejects.toMatchObject({ code: "INPUT_INVALID" });
    await expect(runProgram("return 1", host, { memory_mb: 4096 })).rejects.toMatchObject({ code: "INPUT_INVALID" });
    await expect(runProgram("return 1", host, { max_calls: 1.5 })).rejects.toMatchObject({ code: "INPUT_INVALID" });
  });

  it("ends runs with INTERNAL when their pool closes under them", async () => {
    const own = new CodeWorkerPool({ maxThreads: 1 });
    const waiting = deferred();
    const host = codeHost(
      { s: ["wait"] },
      {
        s_wait: (_args, call) => {
          waiting.resolve();
          return aborted(call.signal);
        },
      },
    );
    const running = runProgram("await s.wait({});", host, {}, { pool: own });
    await waiting.promise;
    await own.close();
    expect((await running).error).toMatchObject({ code: "INTERNAL", message: expect.stringContaining("closed") });
    expect(isAbridgeError(host.calls[0]!.signal.reason, "CANCELLED")).toBe(true);
  });

  it("lets a process that ran programs exit without closing the pool, and writes nothing of a program to stdout", async () => {
    const tsx = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;
    const runtime = pathToFileURL(new URL("../../../src/code/runtime/codeRuntime.ts", import.meta.url).pathname).href;
    const script = [
      `const { runProgram } = await import(${JSON.stringify(runtime)});`,
      "const host = { servers: [], callTool: async () => 1 };",
      "const result = await runProgram(\"console.log('from the program'); console.error('to stderr'); return 40 + 2;\", host);",
      "process.stdout.write(`${result.returnJson} ${result.console.length}\\n`);",
    ].join("\n");
    const child = spawn(process.execPath, ["--import", tsx, "--input-type=module", "-e", script], { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.on("exit", resolve));
    expect({ code, stdout, stderr }).toEqual({ code: 0, stdout: "42 2\n", stderr: "" });
  });

  it("leaves a process alone that imports the worker's module outside a worker thread", async () => {
    const write = process.stdout.write;
    const log = console.log;
    await import("../../../src/code/runtime/codeWorker.js");
    expect(process.stdout.write).toBe(write);
    expect(console.log).toBe(log);
  });
});
