import { ExitCode, type CommandSpec } from "../command.js";
import { writeLine } from "../cliIo.js";
import { formatTable } from "../formatTable.js";
import { withBridge } from "../openBridge.js";

/** `abridge servers`: connects to every upstream and shows its state. */
export const serversCommand: CommandSpec = {
  path: ["servers"],
  summary: "Connect to every configured server and show transport, state, tool count, start time or error",
  options: { json: { type: "boolean", description: "Print JSON" } },
  async run(ctx) {
    return withBridge(
      ctx,
      async (bridge) => {
        const servers = bridge.servers();
        if (ctx.values.json) {
          writeLine(ctx.io.stdout, JSON.stringify(servers, null, 2));
        } else {
          const rows = servers.map((s) => [
            s.name,
            s.transport,
            s.state,
            String(s.toolCount),
            s.error ? `${s.error.code}: ${s.error.message}` : (s.startedAt ?? ""),
          ]);
          writeLine(ctx.io.stdout, formatTable(["server", "transport", "state", "tools", "started / error"], rows, ["left", "left", "left", "right"]));
        }
        return servers.some((s) => s.state === "failed") ? ExitCode.FAILURE : ExitCode.OK;
      },
      // Each failure is in the output already (state and error), in text and in JSON.
      { reportFailed: false },
    );
  },
};
