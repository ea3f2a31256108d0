import { afterAll, describe, expect, it } from "vitest";
import { runProgram } from "../../../src/code/runtime/codeRuntime.js";
import { CodeWorkerPool } from "../../../src/code/runtime/workerPool.js";
import { AbridgeError, isAbridgeError } from "../../../src/model/errors.js";
import { aborted, codeHost, deferred } from "./codeHost.js";

const pool = new CodeWorkerPool();
afterAll(() => pool.close());

/** Every global the engine's context has before the runtime adds its own. */
const ENGINE_GLOBALS = [
  "AggregateError",
  "Array",
  "ArrayBuffer",
  "BigInt",
  "BigInt64Array",
  "BigUint64Array",
  "Boolean",
  "DataView",
  "Date",
  "Error",
  "EvalError",
  "FinalizationRegistry",
  "Float16Array",
  "Float32Array",
  "Float64Array",
  "Function",
  "Infinity",
  "Int16Array",
  "Int32Array",
  "Int8Array",
  "InternalError",
  "Iterator",
  "JSON",
  "Map",
  "Math",
  "NaN",
  "Number",
  "Object",
  "Promise",
  "Proxy",
  "RangeError",
  "ReferenceError",
  "Reflect",
  "RegExp",
  "Set",
  "SharedArrayBuffer",
  "String",
  "Symbol",
  "SyntaxError",
  "TypeError",
  "URIError",
  "Uint16Array",
  "Uint32Array",
  "Uint8Array",
  "Uint8ClampedArray",
  "WeakMap",
  "WeakRef",
  "WeakSet",
  "decodeURI",
  "decodeURIComponent",
  "encodeURI",
  "encodeURIComponent",
  "escape",
  "eval",
  "globalThis",
  "isFinite",
  "isNaN",
  "parseFloat",
  "parseInt",
  "undefined",
  "unescape",
];

const host = codeHost(
  { gh: ["create_issue", "delete_repo"], s: ["echo", "fast", "hang", "big"] },
  {
    gh_create_issue: (args) => ({ created: args }),
    gh_delete_repo: () => {
      throw new AbridgeError("TOOL_REFUSED", 'gh_delete_repo is refused by servers.gh.deny["delete_*"]');
    },
    s_echo: (args) => args,
    s_fast: () => "ok",
    s_hang: (_args, call) => aborted(call.signal),
    s_big: () => "x".repeat(100_000_000),
  },
);

async function value(code: string): Promise<unknown> {
  const result = await runProgram(code, host, {}, { pool });
  if (result.error !== undefined) throw new Error(`${result.error.code}: ${result.error.message}`);
  return result.returnJson === undefined ? undefined : JSON.parse(result.returnJson);
}

describe("hostile programs", () => {
  it("reach no host object through constructor chains, eval or async-function constructors", async () => {
    expect(await value('return (() => {}).constructor("return typeof process")();')).toBe("undefined");
    expect(await value('return await (async () => {}).constructor("return [typeof require, typeof process, typeof module]")();')).toEqual([
      "undefined",
      "undefined",
      "undefined",
    ]);
    expect(await value('return (function* () {}).constructor("return typeof globalThis.process")().next().value;')).toBe("undefined");
    expect(await value('return eval("typeof process + typeof require + typeof fetch + typeof setTimeout + typeof WebAssembly + typeof Buffer");')).toBe(
      "undefinedundefinedundefinedundefinedundefinedundefined",
    );
    expect(await value('return tools.call.constructor("return this")() === globalThis;')).toBe(true);
    expect(await value('return gh.create_issue.constructor.constructor("return Object.getOwnPropertyNames(globalThis).length")() > 0;')).toBe(true);
    expect(await value("return this === undefined;")).toBe(true);
    const ran = await runProgram('return (() => {}).constructor("return process.pid")();', host, {}, { pool });
    expect(ran.error).toMatchObject({ code: "CODE_ERROR", message: expect.stringContaining("ReferenceError: 'process' is not defined") });
  });

  it("sees only the engine's globals, the servers, tools and console", async () => {
    const names = (await value("return Object.getOwnPropertyNames(globalThis).sort();")) as string[];
    expect(names).toEqual([...ENGINE_GLOBALS, "console", "gh", "s", "tools"].sort());
    expect(await value("return Object.getOwnPropertyNames(gh).sort();")).toEqual(["create_issue", "delete_repo"]);
    expect(await value("return Object.getOwnPropertyNames(console).sort();")).toEqual(["error", "info", "log", "warn"]);
  });

  it("cannot load modules: import() and require are not there", async () => {
    const dynamic = await runProgram('const fs = await import("node:fs"); return typeof fs;', host, {}, { pool });
    expect(dynamic.error).toMatchObject({ code: "CODE_ERROR", message: "ReferenceError: could not load module 'node:fs'" });
    const required = await runProgram('const fs = require("fs");\nreturn fs.readFileSync("/etc/passwd", "utf8");', host, {}, { pool });
    expect(required.error).toMatchObject({ code: "CODE_ERROR", line: 1, message: expect.stringContaining("'require' is not defined") });
    const statement = await runProgram('import fs from "fs";\nreturn fs.readFileSync("/etc/passwd", "utf8");', host, {}, { pool });
    expect(statement.error).toMatchObject({ code: "CODE_ERROR", line: 1, message: expect.stringContaining("a program cannot import or export modules") });
  });

  it("returns plain JSON: __proto__ keys stay keys, getters are read in the program, symbols and functions dropped", async () => {
    const result = await runProgram(
      [
        "Object.prototype.polluted = 'inside';",
        'const evil = JSON.parse(\'{"__proto__": {"polluted": "host"}, "constructor": {"prototype": {"polluted": "host"}}}\');',
        "return { evil, get computed() { return 6 * 7; }, [Symbol('hidden')]: 1, sym: Symbol('s'), fn: () => 1, list: [Symbol('x'), () => 2] };",
      ].join("\n"),
      host,
      {},
      { pool },
    );
    expect(result.returnJson).toBe(
      '{"evil":{"__proto__":{"polluted":"host"},"constructor":{"prototype":{"polluted":"host"}}},"computed":42,"list":[null,null]}',
    );
    const parsed = JSON.parse(result.returnJson!) as { evil: object };
    expect(Object.getPrototypeOf(parsed.evil)).toBe(Object.prototype);
    expect(({} as { polluted?: unknown }).polluted).toBeUndefined();
    expect(Object.prototype).not.toHaveProperty("polluted");
  });

  it("hands the host plain JSON copies of arguments: a __proto__ key pollutes nothing, getters are read, functions dropped", async () => {
    const before = host.calls.length;
    await value(
      "await s.echo(Object.assign(JSON.parse('{\"__proto__\": {\"polluted\": true}}'), { get lazy() { return 'read'; }, fn() {}, [Symbol('k')]: 1 }));",
    );
    const args = host.calls[before]!.args;
    expect(Object.getPrototypeOf(args)).toBe(Object.prototype);
    expect(Object.hasOwn(args, "__proto__")).toBe(true);
    expect(args).toEqual(JSON.parse('{"__proto__": {"polluted": true}, "lazy": "read"}'));
    expect(Object.getOwnPropertyDescriptor(args, "lazy")).toMatchObject({ value: "read" });
    expect(({} as { polluted?: unknown }).polluted).toBeUndefined();
  });

  it("refuses cyclic, huge and unserializable return values with clear errors", async () => {
    const cyclic = await runProgram("const a: any[] = []; a.push(a); return a;", host, {}, { pool });
    expect(cyclic.error).toMatchObject({ code: "CODE_ERROR", message: "the return value is not JSON: TypeError: circular reference" });
    const big = await runProgram("const chunk = 'x'.repeat(20000); return Array.from({ length: 1000 }, () => chunk);", host, {}, { pool });
    expect(big.error).toMatchObject({
      code: "CODE_LIMIT",
      message: expect.stringMatching(/^the return value is 2000\d{4} bytes of JSON, over the 16777216 a value may have/),
    });
    const bigint = await runProgram("return { n: 10n };", host, {}, { pool });
    expect(bigint.error).toMatchObject({ code: "CODE_ERROR", message: expect.stringContaining("the return value is not JSON: TypeError") });
    const throwing = await runProgram("return { get bad() { throw new RangeError('no'); } };", host, {}, { pool });
    expect(throwing.error).toMatchObject({ code: "CODE_ERROR", message: "the return value is not JSON: RangeError: no" });
  });

  it("reports values thrown that are not Errors", async () => {
    const thrown: [string, string][] = [
      ["throw 42;", "42"],
      ["throw { a: 1 };", '{"a":1}'],
      ["throw null;", "null"],
      ["throw undefined;", "undefined"],
      ['throw "boom";', '"boom"'],
      ["throw Symbol('s');", "Symbol(s)"],
      ["await Promise.reject(7);", "7"],
    ];
    for (const [code, shown] of thrown) {
      const result = await runProgram(code, host, {}, { pool });
      expect(result.error).toEqual({ code: "CODE_ERROR", message: `the program threw a value that is not an Error: ${shown}` });
    }
  });

  it("refuses calls of a run past its timeout and aborts its calls in flight", async () => {
    const before = host.calls.length;
    const result = await runProgram(
      [
        'tools.call("s_hang", {}).catch(() => {});',
        "let n = 0;",
        "while (true) {",
        "  try { await s.fast({ n: n++ }); } catch (e) { console.log(e.code); }",
        "}",
      ].join("\n"),
      host,
      { timeout_ms: 500 },
      { pool },
    );
    expect(result.error).toMatchObject({ code: "CODE_TIMEOUT" });
    const mine = host.calls.slice(before).filter((c) => c.runId === result.runId);
    const hang = mine.find((c) => c.exposed === "s_hang")!;
    expect(hang.signal.aborted).toBe(true);
    expect(isAbridgeError(hang.signal.reason, "CODE_TIMEOUT")).toBe(true);
    expect(mine.length).toBeGreaterThan(1);
    expect(result.calls).toHaveLength(mine.length);
    // Nothing reaches the host after the run is over: another run from start to end adds none of this one's calls.
    await value("return 1;");
    expect(host.calls.filter((c) => c.runId === result.runId)).toHaveLength(mine.length);
  });

  it("sees a denied tool named through tools.call as an exception with the host's code", async () => {
    expect(await value('try { await tools.call("gh_delete_repo", { name: "x" }); } catch (e) { return [e.name, e.code, e.tool, e.message]; }')).toEqual([
      "ToolError",
      "TOOL_REFUSED",
      "gh_delete_repo",
      'gh_delete_repo is refused by servers.gh.deny["delete_*"]',
    ]);
    expect(await value('try { await tools.call("no_such_tool"); } catch (e) { return e.code; }')).toBe("TOOL_NOT_FOUND");
    expect(await value("try { await tools.call(42 as any); } catch (e) { return [e.name, e.message]; }")).toEqual([
      "TypeError",
      "tools.call: the tool's name must be a string, got number",
    ]);
    expect(await value('try { await tools.call("s_echo", [1, 2] as any); } catch (e) { return [e.code, e.message]; }')).toEqual([
      "INVALID_ARGUMENTS",
      "the arguments of s_echo must be an object, got an array",
    ]);
  });

  it("refuses a 100 MB tool result with CODE_LIMIT, and the process goes on", async () => {
    const rssBefore = process.memoryUsage().rss;
    expect(await value('try { await s.big({}); return "accepted"; } catch (e) { return [e.code, e.tool]; }')).toEqual(["CODE_LIMIT", "s_big"]);
    const uncaught = await runProgram("const v = await s.big({});\nreturn v.length;", host, {}, { pool });
    expect(uncaught.error).toMatchObject({
      code: "CODE_ERROR",
      toolCode: "CODE_LIMIT",
      line: 1,
      message: expect.stringContaining("over 16777216 bytes of JSON"),
    });
    expect(process.memoryUsage().rss - rssBefore).toBeLessThan(1024 * 1024 * 1024);
  });

  it("leaves the host untouched after all of it", async () => {
    const names = Object.getOwnPropertyNames(Object.prototype).sort();
    await value('Object.prototype.x = 1; Array.prototype.push = null; JSON.parse = () => 0; globalThis.tools = null; return "ok";');
    expect(Object.getOwnPropertyNames(Object.prototype).sort()).toEqual(names);
    expect(typeof process.pid).toBe("number");
    expect(JSON.parse("[1]")).toEqual([1]);
    const waiting = deferred();
    setImmediate(waiting.resolve);
    await waiting.promise;
    // A program that replaced its own JSON.parse and Promise.prototype.then still gets tool values and errors.
    expect(
      await value(
        'JSON.parse = () => "mine"; JSON.stringify = () => "mine"; Promise.prototype.then = function () { throw new Error("hijacked"); };\nconst v = await s.echo({ a: 1 }); return v;',
      ),
    ).toEqual({ a: 1 });
  });
});
