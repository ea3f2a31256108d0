/**
 * The JavaScript that sets up a program's globals inside the engine, before the program runs.
 *
 * It is called with two host functions and the globals' spec, keeps the host functions in its
 * closure (no global names them), defines one object per server, `tools` and `console`, and
 * returns `run(main)`, which awaits the program and settles with a plain descriptor: the return
 * value's JSON, or what the program threw. Everything it uses is taken before the program runs, so
 * a program that replaces `JSON.stringify` or `Promise.prototype.then` changes only its own view.
 */

/** The file name the engine gives the prelude in stack traces (frames there are not the program's). */
export const PRELUDE_FILE = "abridge:prelude";

/**
 * `(hostCall, hostLog, specJson) => run`.
 *
 * - `hostCall(tool, argsJson)` returns a promise of the tool's value, or rejects with
 *   `{ code, message }`; the prelude turns that into a `ToolError` made where the program called,
 *   so its stack points at the program's line.
 * - `hostLog(level, text)` keeps one console line.
 * - `run(main)` settles with `{ kind: "none" }`, `{ kind: "value", json }`,
 *   `{ kind: "unserializable", name, message }` or `{ kind: "thrown", ... }`.
 */
export const PRELUDE_SOURCE = `(function (hostCall, hostLog, specJson) {
  "use strict";
  const global = globalThis;
  const defineProperty = Object.defineProperty;
  const stringify = JSON.stringify;
  const parse = JSON.parse;
  const isArray = Array.isArray;
  const apply = Reflect.apply;
  const then = Promise.prototype.then;
  const reject = Promise.reject.bind(Promise);
  const StringOf = String;
  const ErrorBase = Error;
  const TypeErrorOf = TypeError;

  class ToolError extends ErrorBase {
    constructor(tool) {
      super("");
      defineProperty(this, "tool", { value: tool, writable: true, enumerable: true, configurable: true });
      defineProperty(this, "code", { value: "INTERNAL", writable: true, enumerable: true, configurable: true });
    }
  }
  defineProperty(ToolError.prototype, "name", { value: "ToolError", writable: true, configurable: true });

  function kindOf(value) {
    return value === null ? "null" : isArray(value) ? "an array" : typeof value;
  }

  function invoke(tool, args) {
    const error = new ToolError(tool);
    if (args === undefined) args = {};
    if (typeof args !== "object" || args === null || isArray(args)) {
      error.code = "INVALID_ARGUMENTS";
      error.message = "the arguments of " + tool + " must be an object, got " + kindOf(args);
      return reject(error);
    }
    let json;
    try {
      json = stringify(args);
    } catch (cause) {
      error.code = "INVALID_ARGUMENTS";
      error.message = "the arguments of " + tool + " are not JSON: " + show(cause);
      return reject(error);
    }
    return apply(then, hostCall(tool, json), [undefined, function (failure) {
      error.code = StringOf(failure.code);
      error.message = StringOf(failure.message);
      throw error;
    }]);
  }

  function show(value) {
    try {
      if (typeof value === "string") return value;
      if (value instanceof ErrorBase) return StringOf(value.name) + ": " + StringOf(value.message);
      if (typeof value === "function") return "[Function" + (value.name ? ": " + value.name : "") + "]";
      if (typeof value === "bigint") return StringOf(value) + "n";
      if (value === undefined || typeof value === "symbol") return StringOf(value);
      const json = stringify(value);
      return json === undefined ? StringOf(value) : json;
    } catch (cause) {
      try {
        return StringOf(value);
      } catch (again) {
        return "[a value that cannot be shown]";
      }
    }
  }

  function method(value) {
    return { value, writable: true, enumerable: true, configurable: true };
  }

  const consoleObject = {};
  for (const level of ["log", "info", "warn", "error"]) {
    defineProperty(consoleObject, level, method(function () {
      let text = "";
      for (let i = 0; i < arguments.length; i++) text += (i === 0 ? "" : " ") + show(arguments[i]);
      hostLog(level, text);
    }));
  }
  defineProperty(global, "console", { value: consoleObject, writable: true, configurable: true });

  const toolsObject = {};
  defineProperty(toolsObject, "call", method(function call(tool, args) {
    if (typeof tool !== "string") return reject(new TypeErrorOf("tools.call: the tool's name must be a string, got " + kindOf(tool)));
    return invoke(tool, args);
  }));
  defineProperty(global, "tools", { value: toolsObject, writable: true, configurable: true });

  for (const server of parse(specJson).servers) {
    const object = {};
    for (const tool of server.tools) {
      const exposed = tool.exposed;
      defineProperty(object, tool.method, method(function (args) {
        return invoke(exposed, args);
      }));
    }
    defineProperty(global, server.identifier, { value: object, writable: true, configurable: true });
  }

  function describe(thrown) {
    try {
      if (thrown instanceof ErrorBase) {
        const tool = thrown instanceof ToolError;
        return {
          kind: "thrown",
          error: true,
          name: StringOf(thrown.name),
          message: StringOf(thrown.message),
          stack: typeof thrown.stack === "string" ? thrown.stack : "",
          code: tool ? StringOf(thrown.code) : undefined,
          tool: tool ? StringOf(thrown.tool) : undefined,
        };
      }
      const text = typeof thrown === "string" ? stringify(thrown) : show(thrown);
      return { kind: "thrown", error: false, text };
    } catch (cause) {
      return { kind: "thrown", error: false, text: "[a value that cannot be shown]" };
    }
  }

  return async function run(main) {
    let value;
    try {
      value = await main();
    } catch (thrown) {
      return describe(thrown);
    }
    if (value === undefined) return { kind: "none" };
    let json;
    try {
      json = stringify(value);
    } catch (cause) {
      const error = cause instanceof ErrorBase;
      return { kind: "unserializable", name: error ? StringOf(cause.name) : "Error", message: error ? StringOf(cause.message) : show(cause) };
    }
    return json === undefined ? { kind: "none" } : { kind: "value", json };
  };
})`;
