/**
 * The JavaScript names of servers and tools in the code view: a server is a namespace and each of
 * its tools a function in it (`filesystem.read_text_file(...)`). The declarations shown to the model
 * and the runtime that binds the functions must spell every name alike, so both take them from here.
 */
import { compareStrings } from "../model/json.js";

/**
 * Names a server or tool may not take as they are: ECMAScript reserved words (strict mode
 * included, since programs run as modules), TypeScript's predefined type names and the type
 * operators that cannot start a type reference (`keyof.A` does not parse), the program runtime's
 * own globals, and the standard globals a program uses (a namespace `Math` or `JSON` would hide
 * them, a function `Promise` its return type's name).
 */
const RESERVED: ReadonlySet<string> = new Set([
  // ECMAScript reserved words
  "break", "case", "catch", "class", "const", "continue", "debugger", "default", "delete", "do", "else", "enum",
  "export", "extends", "false", "finally", "for", "function", "if", "import", "in", "instanceof", "new", "null",
  "return", "super", "switch", "this", "throw", "true", "try", "typeof", "var", "void", "while", "with",
  // strict mode and module code
  "implements", "interface", "let", "package", "private", "protected", "public", "static", "yield", "await",
  "arguments", "eval",
  // TypeScript predefined types and type operators
  "any", "unknown", "never", "string", "number", "boolean", "symbol", "bigint", "object", "undefined",
  "keyof", "infer", "readonly", "unique",
  // the program runtime's own globals
  "tools", "console", "InternalError",
  // standard globals
  "globalThis", "Infinity", "NaN", "isFinite", "isNaN", "parseFloat", "parseInt", "decodeURI",
  "decodeURIComponent", "encodeURI", "encodeURIComponent", "escape", "unescape",
  "Object", "Function", "Array", "Number", "String", "Boolean", "Symbol", "BigInt", "Math", "JSON", "Date", "RegExp",
  "Error", "AggregateError", "EvalError", "RangeError", "ReferenceError", "SyntaxError", "TypeError", "URIError",
  "Promise", "Map", "Set", "WeakMap", "WeakSet", "WeakRef", "FinalizationRegistry", "Proxy", "Reflect", "Intl",
  "ArrayBuffer", "SharedArrayBuffer", "DataView", "Atomics", "Int8Array", "Uint8Array", "Uint8ClampedArray",
  "Int16Array", "Uint16Array", "Int32Array", "Uint32Array", "Float32Array", "Float64Array", "BigInt64Array",
  "BigUint64Array", "Float16Array", "Iterator", "DisposableStack", "AsyncDisposableStack", "SuppressedError",
  "setTimeout", "clearTimeout", "setInterval", "clearInterval", "queueMicrotask", "structuredClone",
  // type aliases of TypeScript's libraries a declaration could mean
  "Record", "Partial", "Required", "Readonly", "Pick", "Omit",
]);

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/**
 * A server or tool name made into a JavaScript identifier: every character outside `[A-Za-z0-9_$]`
 * becomes `_`, a leading digit (or an empty name) gets a `_` in front, and a reserved word or
 * global ({@link RESERVED}) gets a `_` after it: `my-server` → `my_server`, `2fa` → `_2fa`,
 * `delete` → `delete_`. Distinct names can meet on one identifier (`get-item`, `get.item`);
 * {@link CodeNames} settles that within a set.
 */
export function codeIdentifier(name: string): string {
  let out = name.replace(/[^A-Za-z0-9_$]/g, "_");
  if (out === "" || /^[0-9]/.test(out)) out = `_${out}`;
  if (RESERVED.has(out)) out = `${out}_`;
  return out;
}

/** True when `name` is an identifier that may stand as it is: no change by {@link codeIdentifier}. */
export function isPlainIdentifier(name: string): boolean {
  return IDENTIFIER.test(name) && !RESERVED.has(name);
}

/**
 * Gives every name of `names` a distinct identifier, the same whatever order they come in: a name
 * that is an identifier already keeps itself; the others take {@link codeIdentifier}'s form, in
 * code-unit order of the original names, with `_2`, `_3`, ... after it when that form is taken.
 * `taken` holds identifiers no name may get.
 */
export function assignIdentifiers(names: Iterable<string>, taken: ReadonlySet<string> = new Set()): Map<string, string> {
  const unique = [...new Set(names)].sort(compareStrings);
  const used = new Set(taken);
  const out = new Map<string, string>();
  for (const name of unique) {
    if (isPlainIdentifier(name) && !used.has(name)) {
      out.set(name, name);
      used.add(name);
    }
  }
  for (const name of unique) {
    if (out.has(name)) continue;
    const base = codeIdentifier(name);
    let id = base;
    for (let n = 2; used.has(id); n++) id = `${base}_${n}`;
    out.set(name, id);
    used.add(id);
  }
  return out;
}

/** One tool as the code view names it. */
export interface CodeToolName {
  server: string;
  /** The upstream's tool name. */
  tool: string;
}

/**
 * The identifiers of a set of servers and their tools: one namespace per server, one function per
 * tool, each distinct in its scope. Build it over every tool a program can call, and use the same
 * instance for the declarations of any subset: a name settled over a subset could differ (`get-item`
 * is `get_item` alone, `get_item_2` beside a tool called `get_item`).
 */
export class CodeNames {
  private readonly namespaces: Map<string, string>;
  private readonly functions = new Map<string, Map<string, string>>();
  private readonly byIdentifier = new Map<string, { server: string; tools: Map<string, string> }>();

  private constructor(tools: Iterable<CodeToolName>) {
    const byServer = new Map<string, string[]>();
    for (const { server, tool } of tools) {
      const list = byServer.get(server);
      if (list === undefined) byServer.set(server, [tool]);
      else list.push(tool);
    }
    this.namespaces = assignIdentifiers(byServer.keys());
    for (const [server, toolNames] of byServer) {
      const assigned = assignIdentifiers(toolNames);
      this.functions.set(server, assigned);
      const reverse = new Map([...assigned].map(([tool, id]) => [id, tool]));
      this.byIdentifier.set(this.namespaces.get(server) as string, { server, tools: reverse });
    }
  }

  /** Names for `tools` (repeats are harmless). */
  static of(tools: Iterable<CodeToolName>): CodeNames {
    return new CodeNames(tools);
  }

  /** The namespace identifier of `server`, or undefined when it is not in the set. */
  namespaceOf(server: string): string | undefined {
    return this.namespaces.get(server);
  }

  /** The function identifier of `server`'s `tool`, or undefined when it is not in the set. */
  functionOf(server: string, tool: string): string | undefined {
    return this.functions.get(server)?.get(tool);
  }

  /** The server and tool a program means by `namespace.fn`, or undefined when no tool has that name. */
  resolve(namespace: string, fn: string): CodeToolName | undefined {
    const entry = this.byIdentifier.get(namespace);
    const tool = entry?.tools.get(fn);
    return entry === undefined || tool === undefined ? undefined : { server: entry.server, tool };
  }

  /** Every server as `[server, namespace]`, in code-unit order of the server names. */
  servers(): [string, string][] {
    return [...this.namespaces].sort((a, b) => compareStrings(a[0], b[0]));
  }

  /** Every tool of `server` as `[tool, function]`, in code-unit order of the tool names. */
  toolsOf(server: string): [string, string][] {
    return [...(this.functions.get(server) ?? [])].sort((a, b) => compareStrings(a[0], b[0]));
  }
}
