/**
 * The call pipeline's one step of result shaping: the format the config gives `tool` of `server`
 * (`result_format_tools`, then the server's `result_format`, then the top level), and its
 * `structured` setting, applied to an upstream's result before the output limit counts it.
 */
import type { Config } from "../config/schema.js";
import type { CallToolResult } from "../model/types.js";
import { DEFAULT_RESULT_FORMAT, resultFormatFor } from "./resultFormat.js";
import { shapeResult } from "./shapeResult.js";

/** `result` of `tool` of `server` shaped as `config` says; unchanged for a server it does not list. */
export function shapeCallResult(config: Config, server: string, tool: string, result: CallToolResult): CallToolResult {
  const entry = config.servers.find((s) => s.name === server);
  if (entry === undefined) return shapeResult(result, config.result_format ?? DEFAULT_RESULT_FORMAT);
  return shapeResult(result, resultFormatFor(entry, tool), { structured: entry.structured });
}
