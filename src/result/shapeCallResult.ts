/**
 * The call pipeline's one step of result shaping: the format the config gives `tool` of `server`
 * (`result_format_tools`, then the server's `result_format`, then the top level), and its
 * `structured` setting, applied to an upstream's result before the output limit counts it.
 */
import type { CallToolResult } from "../model/types.js";
import { DEFAULT_RESULT_FORMAT, resultFormatFor, type ResultFormat, type ResultShapeConfig } from "./resultFormat.js";
import { shapeResult } from "./shapeResult.js";

/** The parts of the loaded config that shaping reads (the config's own type lives above this layer). */
export interface ShapingConfig {
  result_format?: ResultFormat | undefined;
  servers: readonly (ResultShapeConfig & { name: string; max_output_bytes?: number | undefined })[];
}

/**
 * How much larger than `max_output_bytes` a text may be and still be shaped: compact saves 40-70%
 * on pretty JSON, rarely more than three quarters, so past four times the limit it would be cut
 * whatever its form, and parsing it would only cost time.
 */
export const SHAPE_LIMIT_FACTOR = 4;

/** `result` of `tool` of `server` shaped as `config` says; a server it does not list gets the top-level format. */
export function shapeCallResult(config: ShapingConfig, server: string, tool: string, result: CallToolResult): CallToolResult {
  const entry = config.servers.find((s) => s.name === server);
  if (entry === undefined) return shapeResult(result, config.result_format ?? DEFAULT_RESULT_FORMAT);
  return shapeResult(result, resultFormatFor(entry, tool), {
    ...(entry.structured !== undefined ? { structured: entry.structured } : {}),
    ...(entry.max_output_bytes !== undefined ? { maxTextChars: entry.max_output_bytes * SHAPE_LIMIT_FACTOR } : {}),
  });
}
