import { recordServer } from "../../core/recordServer.js";
import { ExitCode, type CommandSpec } from "../command.js";
import { writeLine } from "../cliIo.js";
import { selectServers } from "../openBridge.js";

/**
 * `abridge record <server>`: the server's own `tools/list` answer, every page joined, as JSON on
 * stdout. The output is what `recorded = "..."` and `abridge render` read back, and what the
 * benchmark corpus (`bench/corpus/servers/`) is made of.
 */
export const recordCommand: CommandSpec = {
  path: ["record"],
  summary: 'Connect to one server and print its tools/list answer (all pages) as JSON, for `recorded = "..."` and `render`',
  args: "<server>",
  positionals: { min: 1, max: 1 },
  details:
    'Writes {"server", "package"?, "serverInfo"?, "tools": [...]} with the tools exactly as the server sent them (allow/deny not applied). Exit 1 when the server does not start.',
  options: {
    package: { type: "string", value: "SPEC", description: 'Package the server was installed from (name@version), written into the file as "package"' },
  },
  async run(ctx) {
    const [server] = ctx.positionals as [string];
    const loaded = await ctx.loadConfig();
    const config = selectServers(loaded, [server], "positional");
    const { tools, serverInfo } = await recordServer(config, server, {
      env: ctx.io.env,
      logger: ctx.logger,
      signal: ctx.io.signal,
    });
    const packageSpec = ctx.values.package as string | undefined;
    const answer = {
      server,
      ...(packageSpec !== undefined ? { package: packageSpec } : {}),
      ...(serverInfo !== undefined ? { serverInfo } : {}),
      tools,
    };
    writeLine(ctx.io.stdout, JSON.stringify(answer, null, 2));
    ctx.logger.info("recorded", { server, tools: tools.length });
    return ExitCode.OK;
  },
};
