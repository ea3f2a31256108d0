import { createRequire } from "node:module";
import type { Ajv, ErrorObject, Options as AjvOptions, ValidateFunction } from "ajv";
import type { Ajv2019 } from "ajv/dist/2019.js";
import type { Ajv2020 } from "ajv/dist/2020.js";
import { compileLinearPattern, type PatternTester } from "./linearRegExp.js";
import type { CatalogTool } from "./types.js";
import { isObject } from "../model/json.js";
import { messageOf } from "../model/errors.js";

/** Most errors listed in one result: past this the model learns nothing more from the list. */
const MAX_ERRORS = 8;

/** One argument error: where (`labels[0]`, `(root)`) and what. */
export interface ArgumentError {
  path: string;
  message: string;
}

/** Outcome of {@link ArgumentValidator.validate}. */
export type ValidationResult =
  | {
      ok: true;
      skipped?: string;
      /**
       * Patterns of the schema left unchecked because they need a backtracking engine
       * (lookaround, backreferences); the rest of the schema was checked.
       */
      unchecked?: string[];
    }
  | { ok: false; errors: ArgumentError[]; text: string };

type AnyAjv = Ajv | Ajv2019 | Ajv2020;
type Compiled = { validate: ValidateFunction; unchecked?: string[] } | { skipped: string };

/** The ajv engines and its formats plugin. */
interface AjvModules {
  Ajv: typeof Ajv;
  Ajv2019: typeof Ajv2019;
  Ajv2020: typeof Ajv2020;
  addFormats: (ajv: AnyAjv) => unknown;
}

let ajvModules: AjvModules | undefined;

/**
 * ajv, loaded on the first schema compiled rather than with the catalog: over 300 kB of
 * JavaScript that `serve` needs for its first checked call, not to answer initialize or list tools.
 * Required (ajv is CommonJS; the same modules an import would load) so that compiling stays
 * synchronous.
 */
function ajvEngines(): AjvModules {
  if (ajvModules === undefined) {
    const require = createRequire(import.meta.url);
    // ajv-formats sets `exports.default` to the plugin.
    const formats = require("ajv-formats") as { default?: unknown };
    ajvModules = {
      Ajv: (require("ajv") as { Ajv: typeof Ajv }).Ajv,
      Ajv2019: (require("ajv/dist/2019.js") as { Ajv2019: typeof Ajv2019 }).Ajv2019,
      Ajv2020: (require("ajv/dist/2020.js") as { Ajv2020: typeof Ajv2020 }).Ajv2020,
      addFormats: (formats.default ?? formats) as (ajv: AnyAjv) => unknown,
    };
  }
  return ajvModules;
}

/** `/labels/0` -> `labels[0]`; `/a b` -> `["a b"]`; `` -> `(root)`. */
function readablePath(pointer: string, child?: string): string {
  const parts =
    pointer === ""
      ? []
      : pointer
          .slice(1)
          .split("/")
          .map((p) => p.replace(/~1/g, "/").replace(/~0/g, "~"));
  if (child !== undefined) parts.push(child);
  let out = "";
  for (const part of parts) {
    if (/^\d+$/.test(part)) out += `[${part}]`;
    else if (/^[A-Za-z_$][\w$-]*$/.test(part)) out += out === "" ? part : `.${part}`;
    else out += `[${JSON.stringify(part)}]`;
  }
  return out === "" ? "(root)" : out;
}

function describeError(error: ErrorObject): ArgumentError {
  const params = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case "required":
      return { path: readablePath(error.instancePath, String(params.missingProperty)), message: "is required" };
    case "additionalProperties":
      return { path: readablePath(error.instancePath, String(params.additionalProperty)), message: "is not an accepted property" };
    case "enum":
      return {
        path: readablePath(error.instancePath),
        message: `must be one of ${(Array.isArray(params.allowedValues) ? params.allowedValues : []).map((v) => JSON.stringify(v)).join(", ")}`,
      };
    default:
      return { path: readablePath(error.instancePath), message: error.message ?? `fails ${error.keyword}` };
  }
}

/** Why a schema is not worth compiling, or undefined when it is. */
function uncheckable(schema: Record<string, unknown>): string | undefined {
  const meaningful = Object.keys(schema).filter((k) => !["$schema", "$id", "title", "description", "$comment"].includes(k));
  if (meaningful.length === 0) return "schema declares no type or properties (nothing to check)";
  return undefined;
}

/**
 * Validates call arguments against a tool's FULL original input schema before they are forwarded,
 * so a model working from a compact view gets a precise error instead of an upstream failure.
 * The ajv dialect follows `$schema` (2020-12 and 2019-09 get their own classes, anything else
 * draft-07); `strict: false` because real schemas carry unknown keywords; `allErrors` so one
 * reply lists every problem. Each tool key is compiled once. A schema that cannot be compiled (or
 * that constrains nothing, like gitlab's as shipped) is not a reason to refuse calls: `validate`
 * returns `{ok: true, skipped}` and the caller logs the reason once.
 *
 * `pattern` and `patternProperties` run on a linear-time engine (see {@link compileLinearPattern}):
 * a schema comes from an upstream server, and a catastrophic pattern must not freeze the process.
 * A pattern only a backtracking engine can run is left unchecked, named in `unchecked`.
 */
export class ArgumentValidator {
  private readonly compiled = new Map<string, Compiled>();
  private readonly engines = new Map<string, AnyAjv>();
  /** Patterns found unsupported while the current schema compiles. */
  private uncheckedWhileCompiling: string[] = [];

  /** Number of tool keys compiled (or found uncompilable) so far. */
  get size(): number {
    return this.compiled.size;
  }

  /** Validates `args` (missing means `{}`) against `tool`'s original input schema. */
  validate(tool: Pick<CatalogTool, "key" | "name" | "tool">, args: unknown): ValidationResult {
    const value = args === undefined || args === null ? {} : args;
    if (!isObject(value)) {
      const errors = [{ path: "(root)", message: "arguments must be an object" }];
      return { ok: false, errors, text: this.text(tool.name, errors) };
    }
    const compiled = this.compile(tool);
    if ("skipped" in compiled) return { ok: true, skipped: compiled.skipped };
    if (compiled.validate(value)) return compiled.unchecked ? { ok: true, unchecked: [...compiled.unchecked] } : { ok: true };
    const seen = new Set<string>();
    const errors: ArgumentError[] = [];
    for (const raw of compiled.validate.errors ?? []) {
      const error = describeError(raw);
      const id = `${error.path}\u0000${error.message}`;
      if (seen.has(id)) continue;
      seen.add(id);
      errors.push(error);
    }
    return { ok: false, errors, text: this.text(tool.name, errors) };
  }

  private text(name: string, errors: ArgumentError[]): string {
    const shown = errors.slice(0, MAX_ERRORS).map((e) => `${e.path} ${e.message}`);
    const more = errors.length > MAX_ERRORS ? `; and ${errors.length - MAX_ERRORS} more` : "";
    return `Invalid arguments for ${name}: ${shown.join("; ")}${more}.`;
  }

  private compile(tool: Pick<CatalogTool, "key" | "tool">): Compiled {
    const cached = this.compiled.get(tool.key);
    if (cached !== undefined) return cached;
    let result: Compiled;
    const schema = tool.tool.inputSchema;
    const reason = isObject(schema) ? uncheckable(schema) : "schema is not an object";
    if (reason !== undefined) {
      result = { skipped: reason };
    } else {
      // `$schema` picks the engine and `$id` would register the schema globally in that engine
      // (two tools sharing an id would collide), so neither reaches ajv.
      const { $schema, $id: _id, ...rest } = schema;
      this.uncheckedWhileCompiling = [];
      try {
        const validate = this.engine(typeof $schema === "string" ? $schema : "").compile(rest);
        const unchecked = [...new Set(this.uncheckedWhileCompiling)];
        result = unchecked.length > 0 ? { validate, unchecked } : { validate };
      } catch (err) {
        result = { skipped: `schema does not compile: ${messageOf(err)}` };
      }
    }
    this.compiled.set(tool.key, result);
    return result;
  }

  /**
   * ajv's pattern engine: linear-time matching; a pattern it cannot run matches everything and is
   * noted for the schema being compiled (ajv asks for every pattern of every schema it compiles,
   * even one an earlier schema had).
   */
  private patternEngine(): NonNullable<NonNullable<AjvOptions["code"]>["regExp"]> {
    const engine = (pattern: string, u: string): PatternTester => {
      const compiled = compileLinearPattern(pattern, u.includes("u"));
      if ("tester" in compiled) return compiled.tester;
      this.uncheckedWhileCompiling.push(pattern);
      return { test: () => true, toString: () => `/${pattern}/${u} (unchecked)` };
    };
    // ajv's standalone code generation would print this name; abridge never generates code.
    return Object.assign(engine, { code: "linearPattern" });
  }

  private engine(dialect: string): AnyAjv {
    const kind = dialect.includes("2020-12") ? "2020" : dialect.includes("2019-09") ? "2019" : "07";
    let engine = this.engines.get(kind);
    if (engine === undefined) {
      // logger: false: ajv would otherwise warn on console (unknown formats), and the library never prints.
      const options: AjvOptions = { strict: false, allErrors: true, logger: false, code: { regExp: this.patternEngine() } };
      const ajv = ajvEngines();
      engine = kind === "2020" ? new ajv.Ajv2020(options) : kind === "2019" ? new ajv.Ajv2019(options) : new ajv.Ajv(options);
      ajv.addFormats(engine);
      this.engines.set(kind, engine);
    }
    return engine;
  }
}
