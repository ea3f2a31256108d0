import { describeInvalidJson } from "../../config/parseJsonText.js";
import { AbridgeError, ErrorCode } from "../../model/errors.js";
import { normalizeTool } from "../normalizeTool.js";
import { schemaTooDeep } from "../schemaDepth.js";
import type { RawTool } from "../../model/types.js";

/** A recorded `tools/list` answer: the tools and, when the file names it, the server. */
export interface RecordedList {
  server?: string;
  /** The `serverInfo` the file carries (as `abridge record` writes it), when it is well formed. */
  serverInfo?: { name: string; version: string };
  tools: RawTool[];
}

/**
 * Reads a recorded tool list: a corpus-style file `{"server", "tools": [...]}`, a `tools/list`
 * result `{"tools": [...]}`, a JSON-RPC response `{"result": {"tools": [...]}}`, or a bare array.
 *
 * @throws AbridgeError INPUT_INVALID naming the source and what is wrong.
 */
export function parseRecordedList(text: string, source: string): RecordedList {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    // Where and what, not V8's message: it quotes a slice of the text.
    throw new AbridgeError(ErrorCode.INPUT_INVALID, `${source}: expected JSON, got ${describeInvalidJson(text)}`, { cause: err });
  }
  const record = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
  let tools: unknown;
  let server: string | undefined;
  let serverInfo: RecordedList["serverInfo"];
  if (Array.isArray(value)) {
    tools = value;
  } else if (record(value)) {
    if (typeof value.server === "string") server = value.server;
    const info = value.serverInfo ?? (record(value.result) ? value.result.serverInfo : undefined);
    if (record(info) && typeof info.name === "string" && typeof info.version === "string") serverInfo = { name: info.name, version: info.version };
    tools = value.tools ?? (record(value.result) ? value.result.tools : undefined);
  }
  if (!Array.isArray(tools)) {
    throw new AbridgeError(ErrorCode.INPUT_INVALID, `${source}: expected a tools array (a bare array, {"tools": [...]} or {"result": {"tools": [...]}}), got ${Array.isArray(value) ? "array" : typeof value}`);
  }
  const problems: string[] = [];
  const seen = new Set<string>();
  // Depth first: normalizing (and everything after) walks the tool recursively.
  const tooDeep = tools.map((tool: unknown) => (record(tool) ? schemaTooDeep(tool) : undefined));
  // `null` members mean absent, as in a live server's list (see normalizeTool).
  tools = tools.map((tool: unknown, i) => (record(tool) && tooDeep[i] === undefined ? normalizeTool(tool) : tool));
  (tools as unknown[]).forEach((tool, i) => {
    const deep = tooDeep[i];
    if (deep !== undefined) problems.push(`tools[${i}]: ${deep}`);
    else if (!record(tool)) problems.push(`tools[${i}]: expected an object, got ${Array.isArray(tool) ? "array" : typeof tool}`);
    else if (typeof tool.name !== "string" || tool.name === "") problems.push(`tools[${i}].name: expected a non-empty string, got ${JSON.stringify(tool.name) ?? "nothing"}`);
    else if (!record(tool.inputSchema)) problems.push(`tools[${i}].inputSchema: expected an object, got ${JSON.stringify(tool.inputSchema) ?? "nothing"}`);
    else if (seen.has(tool.name)) problems.push(`tools[${i}].name: "${tool.name}" appears twice`);
    else seen.add(tool.name);
  });
  if (problems.length > 0) {
    throw new AbridgeError(ErrorCode.INPUT_INVALID, `${source}: invalid tool list\n${problems.map((p) => `${source}: ${p}`).join("\n")}`);
  }
  return { ...(server !== undefined ? { server } : {}), ...(serverInfo !== undefined ? { serverInfo } : {}), tools: tools as RawTool[] };
}
