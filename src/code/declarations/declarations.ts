/**
 * The code view's declarations: every tool as a TypeScript function in a namespace of its server,
 * with its summary as a doc comment, its arguments typed from `inputSchema` and its result from
 * `outputSchema`, or from the shape its earlier results were seen to have:
 *
 *     declare namespace filesystem {
 *       /** Read a file as text. *\/
 *       function read_text_file(args: { path: string; head?: number; tail?: number }): Promise<unknown>;
 *     }
 *
 * A tool's `$ref` targets are type aliases in a namespace of the function's own name, so two tools'
 * `$defs` never meet. Deterministic (same tools, names and observations, same bytes) and kept per
 * tool content, like the catalog's other per-tool forms.
 */
import { AbridgeError, ErrorCode } from "../../model/errors.js";
import { compareStrings, isObject } from "../../model/json.js";
import { CodeNames } from "./codeNames.js";
import type { ObservedShapes } from "./observedShapes.js";
import { shapeType } from "./observedShapes.js";
import { commentText, TypeScope } from "./schemaTypes.js";
import { briefDescription } from "../../catalog/signature.js";
import type { CatalogTool } from "../../catalog/types.js";

/** What a declaration reads of a catalog tool. */
export type DeclaredTool = Pick<CatalogTool, "server" | "key" | "tool"> & Partial<Pick<CatalogTool, "summary" | "record">>;

/** Options of {@link declarations}. */
export interface DeclarationOptions {
  /**
   * The identifiers of every tool a program can call (default: settled over `tools` alone). Pass
   * the catalog-wide names when declaring a subset, so the names match those the runtime binds.
   */
  names?: CodeNames;
  /** Result shapes seen so far, for tools without an `outputSchema`. */
  observed?: ObservedShapes;
  /** Longest property note in characters; 0 writes none (default 80). */
  noteChars?: number;
}

/** Longest summary line of a tool whose summary is not written yet (its description's start). */
const UNSUMMARIZED_CHARS = 160;

/** The comment after a result type learnt from calls rather than declared by the server. */
export const OBSERVED_MARK = "// observed result shape, not declared";

/**
 * TypeScript declarations of `tools`: one `declare namespace` per server (servers in code-unit
 * order, tools likewise within one), each tool a function taking one argument object.
 *
 * @throws AbridgeError INPUT_INVALID when `options.names` lacks one of `tools`.
 */
export function declarations(tools: readonly DeclaredTool[], options: DeclarationOptions = {}): string {
  const names = options.names ?? CodeNames.of(tools.map((t) => ({ server: t.server, tool: t.tool.name })));
  const byServer = new Map<string, DeclaredTool[]>();
  const seen = new Set<string>();
  for (const tool of tools) {
    // A tool listed twice is declared once (its first entry): a function has one declaration.
    const id = `${tool.server}\u0000${tool.tool.name}`;
    if (seen.has(id)) continue;
    seen.add(id);
    const list = byServer.get(tool.server);
    if (list === undefined) byServer.set(tool.server, [tool]);
    else list.push(tool);
  }
  const blocks: string[] = [];
  for (const server of [...byServer.keys()].sort(compareStrings)) {
    const namespace = names.namespaceOf(server);
    if (namespace === undefined) throw new AbridgeError(ErrorCode.INPUT_INVALID, `declarations: no name for server "${server}"`);
    const members = (byServer.get(server) as DeclaredTool[])
      .slice()
      .sort((a, b) => compareStrings(a.tool.name, b.tool.name))
      .map((tool) => {
        const fn = names.functionOf(server, tool.tool.name);
        if (fn === undefined) throw new AbridgeError(ErrorCode.INPUT_INVALID, `declarations: no name for tool "${server}:${tool.tool.name}"`);
        return toolDeclaration(tool, fn, options);
      });
    blocks.push(`declare namespace ${namespace} {\n${members.join("")}}\n`);
  }
  return blocks.join("");
}

/**
 * Per tool content (the catalog's record of it, else the tool object, which is never changed once
 * listed): its declarations by function name, notes, summary and observed shape, a few, then cleared.
 */
const memo = new WeakMap<object, Map<string, string>>();
const PER_TOOL = 16;

/**
 * The declaration of one tool as function `fn` (lines indented for a namespace body, each ending in
 * a newline): its doc comment, the function, and the namespace of its named types when it has any.
 */
export function toolDeclaration(tool: DeclaredTool, fn: string, options: Pick<DeclarationOptions, "observed" | "noteChars"> = {}): string {
  const observed = tool.tool.outputSchema === undefined ? options.observed?.get(tool.key) : undefined;
  const observedType = observed === undefined ? undefined : shapeType(observed);
  const noteChars = options.noteChars ?? 80;
  const summary = tool.summary === undefined ? "-" : `${tool.summary.summary.length}:${tool.summary.summary}${JSON.stringify(tool.summary.params)}`;
  const key = `${fn}\u0000${noteChars}\u0000${observedType ?? ""}\u0000${summary}`;
  const owner: object = tool.record ?? tool.tool;
  let forms = memo.get(owner);
  const hit = forms?.get(key);
  if (hit !== undefined) return hit;
  const text = writeDeclaration(tool, fn, noteChars, observedType);
  if (forms === undefined) {
    forms = new Map();
    memo.set(owner, forms);
  } else if (forms.size >= PER_TOOL) {
    forms.clear();
  }
  forms.set(key, text);
  return text;
}

function writeDeclaration(tool: DeclaredTool, fn: string, noteChars: number, observedType: string | undefined): string {
  const raw = tool.tool;
  const scope = new TypeScope({ noteChars });
  const input = raw.inputSchema as unknown;
  let args = scope.typeOf({ schema: input, label: "Input", ...(tool.summary !== undefined ? { notes: tool.summary.params } : {}) });
  // Arguments are an object whatever the schema says (MCP sends `arguments` as one).
  if (args === "unknown") args = "{ [key: string]: unknown }";
  const output = raw.outputSchema as unknown;
  const result = output !== undefined ? scope.typeOf({ schema: output, label: "Output" }) : (observedType ?? "unknown");
  const { types, resolve } = scope.finish();

  const summary = commentText(tool.summary?.summary ?? briefDescription(raw.description, UNSUMMARIZED_CHARS));
  const lines: string[] = [];
  if (summary !== "") lines.push(`  /** ${summary} */\n`);
  const param = argumentsOptional(input) ? "args?" : "args";
  const mark = output === undefined && observedType !== undefined ? ` ${OBSERVED_MARK}` : "";
  lines.push(`  function ${fn}(${param}: ${resolve(args, fn)}): Promise<${resolve(result, fn)}>;${mark}\n`);
  if (types.length > 0) {
    lines.push(`  namespace ${fn} {\n${types.map((t) => `    type ${t.name} = ${t.body};\n`).join("")}  }\n`);
  }
  return lines.join("");
}

/**
 * True when a call may leave the argument object out: the input schema is a plain object schema
 * (no combinators, no ref at its root) that requires no property. Anything else keeps it required.
 */
function argumentsOptional(schema: unknown): boolean {
  if (schema === undefined || schema === true) return true;
  if (!isObject(schema)) return false;
  for (const keyword of ["$ref", "allOf", "anyOf", "oneOf", "not", "if"]) {
    if (keyword in schema) return false;
  }
  const type = schema.type;
  if (type !== undefined && type !== "object" && !(Array.isArray(type) && type.includes("object"))) return false;
  if (typeof schema.minProperties === "number" && schema.minProperties > 0) return false;
  return !Array.isArray(schema.required) || schema.required.length === 0;
}
