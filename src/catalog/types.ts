import type { FormTokens } from "../cache/cacheEntry.js";
import type { Mode } from "../config/schema.js";
import type { ToolSummary } from "../summarize/types.js";
import type { ExposedTool, ListedTool } from "../model/types.js";
import type { AdmittedTool } from "../upstream/admitTool.js";
import type { ToolRecord } from "./catalogMemo.js";

export type { ListedTool, Mode };

/** A server's tool with where it is exposed, admitted (see admitTool): what a catalog takes. */
export interface AdmittedExposedTool extends ExposedTool {
  tool: AdmittedTool;
}

/** A discovered tool with everything the views need. */
export interface CatalogTool {
  /** Exposed name, e.g. `github_create_issue` (unique across the catalog). */
  name: string;
  server: string;
  /** `mcp://<server>/<tool>`. */
  uri: string;
  /** Cache key `server:tool:hash`. */
  key: string;
  /** The upstream's tool as admitted (see admitTool): depth checked, null means absent. */
  tool: AdmittedTool;
  /**
   * What was derived from `tool`'s content (see CatalogMemo), set by the catalog on every tool it
   * holds: forms rendered from it are kept there. Absent on a tool made outside a catalog; such a
   * tool is rendered anew.
   */
  record?: ToolRecord;
  /** The cached summary, when there is one (a miss serves the original description). */
  summary?: ToolSummary;
  /**
   * Tokens of each rendering with `summary`, from the same cache entry when it has them: lists
   * choose between forms by these, without the tokenizer (see `RENDERER_VERSION`).
   */
  formTokens?: FormTokens;
}
