import { AbridgeError, ErrorCode } from "../../model/errors.js";
import { childMarkerEnv } from "../../upstream/nestedAbridge.js";
import { UpstreamPool } from "../../upstream/upstreamPool.js";
import { VERSION } from "../../model/version.js";
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
  summary: "Connect to one server and print its tools/list answer (all pages) as JSON, for `recorded = \"...\"` and `render`",
  args: "<server>",
  positionals: { min: 1, max: 1 },
  details:
    "Writes {\"server\", \"package\"?, \"serverInfo\"?, \"tools\": [...]} with the tools exactly as the server sent them (allow/deny not applied). Exit 1 when the server does not start.",
  options: {
    package: { type: "string", value: "SPEC", description: "Package the server was installed from (name@version), written into the file as \"package\"" },
  },
  async run(ctx) {
    const [server] = ctx.positionals as [string];
    const loaded = await ctx.loadConfig();
    const config = selectServers(loaded, [server], "positional");
    const entry = config.servers[0]!;
    if (!entry.enabled) {
      throw new AbridgeError(ErrorCode.UPSTREAM_UNAVAILABLE, `server ${server} is disabled (enabled = false in ${config.source})`);
    }
    const pool = new UpstreamPool({
      servers: config.servers,
      separator: config.separator,
      logger: ctx.logger,
      // The recording is the server's whole answer: allow/deny does not apply to it.
      exposes: () => true,
      // Lets an abridge among the servers see that it would serve this config again.
      childEnv: childMarkerEnv(config.source, ctx.io.env),
      clientInfo: { name: "abridge", version: VERSION },
    });
    try {
      await pool.start(ctx.io.signal);
      const status = pool.status(server);
      if (status?.state !== "ready") {
        throw new AbridgeError(status?.error?.code ?? ErrorCode.UPSTREAM_START_FAILED, `server ${server} failed to start: ${status?.error?.message ?? status?.state ?? "unknown"}`);
      }
      const tools = await pool.recordTools(server, { signal: ctx.io.signal });
      const packageSpec = ctx.values.package as string | undefined;
      const answer = {
        server,
        ...(packageSpec !== undefined ? { package: packageSpec } : {}),
        ...(status.serverInfo !== undefined ? { serverInfo: status.serverInfo } : {}),
        tools,
      };
      writeLine(ctx.io.stdout, JSON.stringify(answer, null, 2));
      ctx.logger.info("recorded", { server, tools: tools.length });
      return ExitCode.OK;
    } finally {
      await pool.close();
    }
  },
};
