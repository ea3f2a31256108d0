import { failedStartError } from "../../core/failedStart.js";
import { ExitCode, type CommandSpec } from "../command.js";
import { writeLine } from "../cliIo.js";
import { CACHE_DIR_OPTION, selectServers, withBridge } from "../openBridge.js";
import { jsonObjectArgument, positiveIntOption } from "../usageError.js";

/** `abridge call <server> <tool>`: one tool call, printed as JSON. */
export const callCommand: CommandSpec = {
  path: ["call"],
  summary: "Call one tool and print its result as JSON (exit 1 when the tool reports an error)",
  args: "<server> <tool>",
  positionals: { min: 2, max: 2 },
  options: {
    args: { type: "string", value: "JSON", description: "Arguments as a JSON object (default {})" },
    "timeout-ms": { type: "string", value: "MS", description: "Call timeout (default: the server's timeout_ms)" },
    ...CACHE_DIR_OPTION,
  },
  async run(ctx) {
    const [server, tool] = ctx.positionals as [string, string];
    const args = jsonObjectArgument(ctx.values.args as string | undefined, "--args");
    const timeoutMs = positiveIntOption(ctx.values, "timeout-ms");
    const config = selectServers(await ctx.loadConfig(), [server], "positional");
    return withBridge(
      ctx,
      async (bridge) => {
        const status = bridge.status(server);
        if (status?.state === "failed") throw failedStartError(status);
        const result = await bridge.callServerTool(server, tool, args, {
          signal: ctx.io.signal,
          mode: "compact",
          ...(timeoutMs !== undefined ? { timeoutMs } : {}),
        });
        writeLine(ctx.io.stdout, JSON.stringify(result, null, 2));
        return result.isError === true ? ExitCode.FAILURE : ExitCode.OK;
      },
      // The server's failure is the error the command ends with: not named again.
      { config, reportFailed: false },
    );
  },
};
