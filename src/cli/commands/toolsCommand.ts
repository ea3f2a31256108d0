import { MODES, type Mode } from "../../config/schema.js";
import { ExitCode, type CommandSpec } from "../command.js";
import { writeLine } from "../cliIo.js";
import { CACHE_DIR_OPTION, withBridge } from "../openBridge.js";
import { usageError } from "../usageError.js";

/**
 * The modes `--mode` accepts, for help: the list {@link parseMode} checks, so the two cannot
 * differ. `note` is added after the mode that is the default, when one is.
 */
export function modeChoices(defaultMode?: { mode: Mode; note: string }): string {
  return MODES.map((m) => (m === defaultMode?.mode ? `${m} ${defaultMode.note}` : m)).join(" | ");
}

/** Parses `--mode`. */
export function parseMode(value: unknown, fallback: Mode): Mode {
  if (value === undefined) return fallback;
  if (typeof value === "string" && (MODES as readonly string[]).includes(value)) return value as Mode;
  throw usageError(`--mode: expected one of ${MODES.join(", ")}, got "${String(value)}"`);
}

/** `abridge tools`: every tool of every server as a client would list it. */
export const toolsCommand: CommandSpec = {
  path: ["tools"],
  summary: "List every tool of every server (full descriptions unless --mode says otherwise)",
  options: {
    json: { type: "boolean", description: "Print the tools/list result as JSON" },
    mode: { type: "string", value: "MODE", description: modeChoices({ mode: "full", note: "(default)" }) },
    ...CACHE_DIR_OPTION,
  },
  async run(ctx) {
    const mode = parseMode(ctx.values.mode, "full");
    return withBridge(ctx, async (bridge) => {
      const tools = bridge.list(mode);
      if (ctx.values.json) {
        writeLine(ctx.io.stdout, JSON.stringify({ tools }, null, 2));
      } else {
        for (const tool of tools) {
          writeLine(ctx.io.stdout, tool.name);
          if (tool.description) writeLine(ctx.io.stdout, tool.description.replace(/^/gm, "    "));
        }
      }
      // Like `servers`: a list with a server missing is an incomplete answer, so it is exit 1 (the
      // README's exit codes); withBridge names the server on stderr, in JSON mode too (stdout stays JSON).
      return bridge.servers().some((s) => s.state === "failed") ? ExitCode.FAILURE : ExitCode.OK;
    });
  },
};
