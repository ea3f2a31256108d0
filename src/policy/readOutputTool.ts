import type { ListedTool } from "../catalog/types.js";
import type { Config } from "../config/schema.js";

/** Meta-tool: page through a result that was cut and kept (`spill = true`). */
export const READ_OUTPUT = "read_output";

/** The `read_output` tool: `{handle, offset}`, as the marker of a cut result tells. */
export function readOutputTool(): ListedTool {
  return {
    name: READ_OUTPUT,
    description: "Read more of a cut tool output, from the handle and offset its marker gives.",
    inputSchema: {
      type: "object",
      properties: { handle: { type: "string" }, offset: { type: "integer", minimum: 0 } },
      required: ["handle"],
    },
    annotations: { readOnlyHint: true },
  };
}

/**
 * Meta-tools a front end lists besides the catalog's: `read_output` when any enabled server has
 * `spill = true` (otherwise no result ever carries a handle, and the tool would be noise).
 */
export function extraMetaTools(config: Pick<Config, "servers">): ListedTool[] {
  return config.servers.some((s) => s.enabled && s.spill) ? [readOutputTool()] : [];
}
