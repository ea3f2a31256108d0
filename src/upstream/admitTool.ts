import { ErrorCode } from "../model/errors.js";
import { isObject } from "../model/json.js";
import type { AdmittedTool, JsonObject, RawTool } from "../model/types.js";
import type { Logger } from "../log/logger.js";
import { normalizeTool } from "./normalizeTool.js";
import { schemaTooDeep } from "./schemaDepth.js";

export type { AdmittedTool } from "../model/types.js";

/** Why a value is not an admissible tool, in the order {@link admitTool} checks. */
export type AdmissionReason = "notObject" | "tooDeep" | "noName" | "noInputSchema";

/** One refused tool: what was wrong and where. Each entry point words it for its own report. */
export interface AdmissionProblem {
  reason: AdmissionReason;
  /** Always `INPUT_INVALID`: the tool as given is bad input. */
  code: ErrorCode;
  /** The member at fault, relative to the tool; "" for the tool as a whole. */
  field: "" | "name" | "inputSchema";
  /** `expected an object, got array`, `its definition nests deeper than 256 levels`, ... */
  message: string;
  /** The tool's name, when it has a string one (for logs). */
  name?: string;
  /** The tool with nulls dropped, for a `noName` or `noInputSchema` refusal (for an entry point's own shape report). */
  normalized?: JsonObject;
}

/** What {@link admitTool} decided. */
export type Admission = { ok: true; tool: AdmittedTool } | { ok: false; problem: AdmissionProblem };

/**
 * Every object admission produced. A tool is never changed once admitted (every reader treats it
 * as read-only), so an object met again is admitted by identity, with no schema walk: the tool of
 * a summarize job, which came from the catalog, is measured for its cache entry at the cost of a
 * lookup (see `summaryTokens`).
 */
const admitted = new WeakSet<object>();

function refuse(
  reason: AdmissionReason,
  field: AdmissionProblem["field"],
  message: string,
  extra: Pick<AdmissionProblem, "name" | "normalized"> = {},
): Admission {
  return { ok: false, problem: { reason, code: ErrorCode.INPUT_INVALID, field, message, ...extra } };
}

/**
 * The one rule for a tool entering abridge, whoever sends it (an MCP server's `tools/list`, a
 * recorded list, a JSON-RPC manifest): checked in this order,
 * 1. it is an object (`notObject`);
 * 2. it nests no deeper than the schema depth bound (`tooDeep`), checked before anything walks it
 *    recursively, normalizing included;
 * 3. its `null` members are dropped (see {@link normalizeTool});
 * 4. it has a string `name` (`noName`) and 5. an object `inputSchema` (`noInputSchema`).
 * What an entry point adds (duplicate names, a non-empty name, a manifest's field types) it checks
 * itself, on top.
 */
export function admitTool(value: unknown): Admission {
  if (isObject(value) && admitted.has(value)) return { ok: true, tool: value as AdmittedTool };
  if (!isObject(value)) return refuse("notObject", "", `expected an object, got ${Array.isArray(value) ? "array" : typeof value}`);
  const name = typeof value.name === "string" ? { name: value.name } : {};
  const tooDeep = schemaTooDeep(value);
  if (tooDeep !== undefined) return refuse("tooDeep", "", tooDeep, name);
  const normalized = normalizeTool(value);
  if (typeof normalized.name !== "string") {
    return refuse("noName", "name", `expected a string, got ${JSON.stringify(normalized.name) ?? "nothing"}`, { normalized });
  }
  if (!isObject(normalized.inputSchema)) {
    return refuse("noInputSchema", "inputSchema", `expected an object, got ${JSON.stringify(normalized.inputSchema) ?? "nothing"}`, {
      name: normalized.name,
      normalized,
    });
  }
  admitted.add(normalized);
  return { ok: true, tool: normalized as AdmittedTool };
}

/**
 * `tool` without the top-level members `keys` (a manifest's own `mcpExpose`): still admitted, since
 * taking members away keeps every rule (`name` and `inputSchema` cannot be taken).
 */
export function withoutMembers(tool: AdmittedTool, ...keys: string[]): AdmittedTool {
  const out: JsonObject = { ...tool };
  for (const key of keys) if (key !== "name" && key !== "inputSchema") delete out[key];
  admitted.add(out);
  return out as AdmittedTool;
}

/**
 * `tools` (a server's tools with where they are exposed) with each tool admitted; one refused is
 * left out with a `tool quarantined` warning naming its server, tool and reason. Tools an
 * upstream admitted pass by identity.
 */
export function admitExposed<T extends { server: string; tool: RawTool }>(tools: readonly T[], logger: Logger): (Omit<T, "tool"> & { tool: AdmittedTool })[] {
  const out: (Omit<T, "tool"> & { tool: AdmittedTool })[] = [];
  for (const given of tools) {
    const admission = admitTool(given.tool);
    if (admission.ok) out.push({ ...given, tool: admission.tool });
    else logger.warn("tool quarantined", { server: given.server, tool: given.tool.name, reason: admission.problem.message });
  }
  return out;
}
