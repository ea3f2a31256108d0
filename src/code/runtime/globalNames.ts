/**
 * The names a program sees: one global object per server, named after the server's config name,
 * with one method per exposed tool, named after the tool's upstream name (`my-server.get_item`).
 *
 * The rule is the one the code view's TypeScript declarations follow, so what the model reads is
 * what the program can call: every character outside `[A-Za-z0-9_$]` becomes `_`, an empty name
 * or one starting with a digit gets a `_` in front, and a reserved word or a global the program
 * already has gets a `_` after it (`delete` -> `delete_`, `JSON` -> `JSON_`). A host that names
 * the globals itself (the declarations' own names) passes them as `identifier` and `method`.
 */
import { AbridgeError, ErrorCode } from "../../model/errors.js";
import { compareStrings } from "../../model/json.js";

/**
 * What no server or tool may be called as it is: ECMAScript reserved words (strict mode included),
 * TypeScript's predefined types and type operators (a declaration `namespace string` would not
 * parse as meant), every global of the engine's context and the runtime's own `tools` and
 * `console`, and globals TypeScript's libraries declare besides (a namespace `Promise` would hide
 * the type of every result).
 */
const RESERVED: ReadonlySet<string> = new Set([
  // ECMAScript reserved words, strict mode and module code
  "break",
  "case",
  "catch",
  "class",
  "const",
  "continue",
  "debugger",
  "default",
  "delete",
  "do",
  "else",
  "enum",
  "export",
  "extends",
  "false",
  "finally",
  "for",
  "function",
  "if",
  "import",
  "in",
  "instanceof",
  "new",
  "null",
  "return",
  "super",
  "switch",
  "this",
  "throw",
  "true",
  "try",
  "typeof",
  "var",
  "void",
  "while",
  "with",
  "implements",
  "interface",
  "let",
  "package",
  "private",
  "protected",
  "public",
  "static",
  "yield",
  "await",
  "arguments",
  "eval",
  // TypeScript's predefined types and type operators
  "any",
  "unknown",
  "never",
  "string",
  "number",
  "boolean",
  "symbol",
  "bigint",
  "object",
  "undefined",
  "keyof",
  "infer",
  "readonly",
  "unique",
  // the runtime's globals
  "tools",
  "console",
  // the engine's globals
  "globalThis",
  "Infinity",
  "NaN",
  "isFinite",
  "isNaN",
  "parseFloat",
  "parseInt",
  "decodeURI",
  "decodeURIComponent",
  "encodeURI",
  "encodeURIComponent",
  "escape",
  "unescape",
  "Object",
  "Function",
  "Array",
  "Number",
  "String",
  "Boolean",
  "Symbol",
  "BigInt",
  "Math",
  "JSON",
  "Date",
  "RegExp",
  "Error",
  "AggregateError",
  "EvalError",
  "RangeError",
  "ReferenceError",
  "SyntaxError",
  "TypeError",
  "URIError",
  "InternalError",
  "Promise",
  "Map",
  "Set",
  "WeakMap",
  "WeakSet",
  "WeakRef",
  "FinalizationRegistry",
  "Proxy",
  "Reflect",
  "ArrayBuffer",
  "SharedArrayBuffer",
  "DataView",
  "Int8Array",
  "Uint8Array",
  "Uint8ClampedArray",
  "Int16Array",
  "Uint16Array",
  "Int32Array",
  "Uint32Array",
  "Float16Array",
  "Float32Array",
  "Float64Array",
  "BigInt64Array",
  "BigUint64Array",
  "Iterator",
  "DisposableStack",
  "AsyncDisposableStack",
  "SuppressedError",
  // what TypeScript's libraries declare besides
  "Intl",
  "Atomics",
  "setTimeout",
  "clearTimeout",
  "setInterval",
  "clearInterval",
  "queueMicrotask",
  "structuredClone",
  "Record",
  "Partial",
  "Required",
  "Readonly",
  "Pick",
  "Omit",
]);

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/** A name made into an identifier by the rule above (`my-server` -> `my_server`, `2fa` -> `_2fa`, `delete` -> `delete_`). */
export function toIdentifier(name: string): string {
  let id = name.replace(/[^A-Za-z0-9_$]/g, "_");
  if (id === "" || /^[0-9]/.test(id)) id = `_${id}`;
  if (RESERVED.has(id)) id = `${id}_`;
  return id;
}

/** True when `name` stands as it is: an identifier that is not reserved. */
export function isPlainIdentifier(name: string): boolean {
  return IDENTIFIER.test(name) && !RESERVED.has(name);
}

/**
 * A distinct identifier for each name, the same whatever order the names come in: a plain
 * identifier keeps itself; the others take {@link toIdentifier}'s form, in code-unit order of the
 * names, with `_2`, `_3`, ... after it when that form is taken (`get-item` is `get_item` alone,
 * `get_item_2` beside a tool called `get_item`). `taken` holds identifiers no name may get.
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
    const base = toIdentifier(name);
    let id = base;
    for (let n = 2; used.has(id); n++) id = `${base}_${n}`;
    out.set(name, id);
    used.add(id);
  }
  return out;
}

/** A tool as the host describes it. */
export interface CodeToolName {
  /** The tool's name on its server (upstream). */
  name: string;
  /** The name the bridge exposes it under: what `tools.call` takes and the host is called with. */
  exposed: string;
  /** The method's name when the host settles it (the declarations' name); by default from `name`. */
  method?: string;
}

/** A server as the host describes it. */
export interface CodeServerName {
  /** The server's config name. */
  name: string;
  /** The global's name when the host settles it (the declarations' name); by default from `name`. */
  identifier?: string;
  tools: readonly CodeToolName[];
}

/** A server's global in a program. */
export interface CodeServerGlobal {
  name: string;
  identifier: string;
  tools: { name: string; exposed: string; method: string }[];
}

function checked(kind: string, id: string, used: Set<string>): string {
  if (!isPlainIdentifier(id)) throw new AbridgeError(ErrorCode.INPUT_INVALID, `${kind} "${id}" is not an identifier a program can use`);
  if (used.has(id)) throw new AbridgeError(ErrorCode.INPUT_INVALID, `${kind} "${id}" is given twice`);
  used.add(id);
  return id;
}

/**
 * The globals of a program for these servers, in the order given. Identifiers the host gives are
 * used as they are (each must be a plain identifier, distinct in its scope: else `INPUT_INVALID`).
 */
export function codeNames(servers: readonly CodeServerName[]): CodeServerGlobal[] {
  const serverIds = assignIdentifiers(servers.filter((s) => s.identifier === undefined).map((s) => s.name));
  const globals = new Set<string>();
  return servers.map((server) => {
    const identifier = checked("server global", server.identifier ?? serverIds.get(server.name)!, globals);
    const methodIds = assignIdentifiers(server.tools.filter((t) => t.method === undefined).map((t) => t.name));
    const methods = new Set<string>();
    const tools = server.tools.map((tool) => ({
      name: tool.name,
      exposed: tool.exposed,
      method: checked(`method of ${identifier}`, tool.method ?? methodIds.get(tool.name)!, methods),
    }));
    return { name: server.name, identifier, tools };
  });
}
