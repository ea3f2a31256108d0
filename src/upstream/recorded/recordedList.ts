import { describeInvalidJson } from "../../config/parseJsonText.js";
import { AbridgeError, ErrorCode } from "../../model/errors.js";
import { admitTool, type AdmittedTool } from "../admitTool.js";
import { isObject } from "../../model/json.js";

/** A recorded `tools/list` answer: the tools and, when the file names it, the server. */
export interface RecordedList {
  server?: string;
  /** The `serverInfo` the file carries (as `abridge record` writes it), when it is well formed. */
  serverInfo?: { name: string; version: string };
  tools: AdmittedTool[];
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
  let tools: unknown;
  let server: string | undefined;
  let serverInfo: RecordedList["serverInfo"];
  if (Array.isArray(value)) {
    tools = value;
  } else if (isObject(value)) {
    if (typeof value.server === "string") server = value.server;
    const info = value.serverInfo ?? (isObject(value.result) ? value.result.serverInfo : undefined);
    if (isObject(info) && typeof info.name === "string" && typeof info.version === "string") serverInfo = { name: info.name, version: info.version };
    tools = value.tools ?? (isObject(value.result) ? value.result.tools : undefined);
  }
  if (!Array.isArray(tools)) {
    throw new AbridgeError(
      ErrorCode.INPUT_INVALID,
      `${source}: expected a tools array (a bare array, {"tools": [...]} or {"result": {"tools": [...]}}), got ${Array.isArray(value) ? "array" : typeof value}`,
    );
  }
  const problems: string[] = [];
  const seen = new Set<string>();
  const admittedTools: AdmittedTool[] = [];
  // The one admission rule (see admitTool), as for a live server's list; a recorded name must
  // also be non-empty and unique.
  (tools as unknown[]).forEach((tool, i) => {
    const admission = admitTool(tool);
    if (!admission.ok) {
      const { reason, field, message, normalized } = admission.problem;
      // A recorded name is also non-empty, and the name is reported before the inputSchema.
      if (reason === "noName" || normalized?.name === "")
        problems.push(`tools[${i}].name: expected a non-empty string, got ${JSON.stringify(normalized?.name) ?? "nothing"}`);
      else problems.push(`tools[${i}]${field === "" ? "" : `.${field}`}: ${message}`);
    } else if (admission.tool.name === "") problems.push(`tools[${i}].name: expected a non-empty string, got ""`);
    else if (seen.has(admission.tool.name)) problems.push(`tools[${i}].name: "${admission.tool.name}" appears twice`);
    else {
      seen.add(admission.tool.name);
      admittedTools.push(admission.tool);
    }
  });
  if (problems.length > 0) {
    throw new AbridgeError(ErrorCode.INPUT_INVALID, `${source}: invalid tool list\n${problems.map((p) => `${source}: ${p}`).join("\n")}`);
  }
  return { ...(server !== undefined ? { server } : {}), ...(serverInfo !== undefined ? { serverInfo } : {}), tools: admittedTools };
}
