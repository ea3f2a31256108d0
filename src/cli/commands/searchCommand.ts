import { parseSearchLimit, SEARCH_LIMIT_RANGE } from "../../core/toolSearch.js";
import { ErrorCode } from "../../model/errors.js";
import { ExitCode, type CommandSpec } from "../command.js";
import { writeLine } from "../cliIo.js";
import { formatTable } from "../formatTable.js";
import { CACHE_DIR_OPTION, withBridge } from "../openBridge.js";
import { usageError } from "../usageError.js";

/** Longest summary shown in a table row: a table line should fit a wide terminal. */
const SUMMARY_WIDTH = 80;

function clip(text: string, width: number): string {
  const line = text.replace(/\s+/g, " ").trim();
  return line.length <= width ? line : `${line.slice(0, width - 1).trimEnd()}…`;
}

/** `abridge search "<query>"`: the configured catalog ranked for a task, as `search_tools` ranks it. */
export const searchCommand: CommandSpec = {
  path: ["search"],
  summary: "Rank every configured tool for a task description, as the search_tools meta-tool does",
  args: "<query>",
  positionals: { min: 1, max: 1 },
  details: "Uses the summaries already cached (it writes none). Exit 1 when a server did not start (its tools are missing from the ranking).",
  options: {
    limit: { type: "string", value: "N", description: `Number of results, ${SEARCH_LIMIT_RANGE} (default: as search_tools)` },
    json: { type: "boolean", description: "Print the results as a JSON array (name, server, tool, score, summary, signature)" },
    ...CACHE_DIR_OPTION,
  },
  async run(ctx) {
    const [query] = ctx.positionals as [string];
    if (query.trim() === "") throw usageError("search: expected a query, got an empty string");
    const limit = parseSearchLimit(ctx.values.limit, "--limit", ErrorCode.USAGE);
    return withBridge(
      ctx,
      async (bridge) => {
        const results = bridge.search(query, limit);
        if (ctx.values.json) {
          writeLine(ctx.io.stdout, JSON.stringify(results, null, 2));
        } else if (results.length === 0) {
          writeLine(ctx.io.stdout, `No tool matches "${query}".`);
        } else {
          const rows = results.map((r, i) => [String(i + 1), r.name, r.score.toFixed(2), clip(r.summary, SUMMARY_WIDTH)]);
          writeLine(ctx.io.stdout, formatTable(["#", "tool", "score", "summary"], rows, ["right", "left", "right", "left"]));
        }
        // A server that failed to start has no tools in the ranking (withBridge names it on stderr).
        return bridge.servers().some((s) => s.state === "failed") ? ExitCode.FAILURE : ExitCode.OK;
      },
      { queueMisses: false },
    );
  },
};
