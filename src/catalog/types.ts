import type { Mode } from "../config/schema.js";
import type { ToolSummary } from "../summarize/types.js";
import type { ListedTool, RawTool } from "../model/types.js";
import type { ToolRecord } from "./catalogMemo.js";

export type { ListedTool, Mode };

/** A discovered tool with everything the views need. */
export interface CatalogTool {
  /** Exposed name, e.g. `github_create_issue` (unique across the catalog). */
  name: string;
  server: string;
  /** `mcp://<server>/<tool>`. */
  uri: string;
  /** Cache key `server:tool:hash`. */
  key: string;
  /** The upstream's tool, untouched. */
  tool: RawTool;
  /**
   * What was derived from `tool`'s content (see CatalogMemo), set by the catalog: forms rendered
   * from it are kept there. Absent for a tool without a JSON form; such a tool is rendered anew.
   */
  record?: ToolRecord;
  /** The cached summary, when there is one (a miss serves the original description). */
  summary?: ToolSummary;
}
