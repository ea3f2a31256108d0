import { readFile } from "node:fs/promises";
import path from "node:path";
import { text as readStream } from "node:stream/consumers";
import { MODES } from "../../config/schema.js";
import { configFileSchema, type Config } from "../../config/schema.js";
import { renderRecorded } from "../../core/renderRecorded.js";
import { AbridgeError, ErrorCode, isAbridgeError } from "../../model/errors.js";
import { ExitCode, type CommandContext, type CommandSpec } from "../command.js";
import { writeLine } from "../cliIo.js";
import { formatCount, formatShare, formatTable } from "../formatTable.js";
import { CACHE_DIR_OPTION, cacheFileFor } from "../openBridge.js";
import { positiveIntOption, usageError } from "../usageError.js";
import { modeChoices, parseMode } from "./toolsCommand.js";

async function readInput(ctx: CommandContext): Promise<{ text: string; source: string }> {
  const input = ctx.values.input as string | undefined;
  if (input === undefined || input === "-") return { text: await readStream(ctx.io.stdin), source: "<stdin>" };
  const file = path.resolve(ctx.io.cwd, input);
  try {
    return { text: await readFile(file, "utf8"), source: input };
  } catch (err) {
    throw new AbridgeError(ErrorCode.INPUT_INVALID, `--input: cannot read ${input}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`, { cause: err });
  }
}

/** The config render uses: the one found, or defaults when there is none (render needs no servers). */
async function renderConfig(ctx: CommandContext): Promise<Config> {
  try {
    return await ctx.loadConfig();
  } catch (err) {
    const explicit = ctx.values.config !== undefined || ctx.io.env.ABRIDGE_CONFIG !== undefined;
    if (explicit || !isAbridgeError(err, ErrorCode.CONFIG_NOT_FOUND)) throw err;
    return { ...configFileSchema.parse({}), source: "<built-in>", servers: [] };
  }
}

/** `abridge render`: the drop-in layer for other bridges. */
export const renderCommand: CommandSpec = {
  path: ["render"],
  summary: "Print a recorded tools/list answer as a client would receive it in a mode, summarized through the cache",
  details: "Input: a recorded answer like bench/corpus/servers/*.json, a tools/list result, or a bare tools array (--input - or no --input reads stdin).",
  options: {
    input: { type: "string", short: "i", value: "FILE", description: "Recorded tools/list answer (default: stdin)" },
    server: { type: "string", value: "NAME", description: 'Server name (default: the file\'s "server" field or its base name)' },
    mode: { type: "string", value: "MODE", description: `${modeChoices()} (default: the config's mode, compact)` },
    json: { type: "boolean", description: "Print exactly the tools/list result a client receives" },
    tokens: { type: "boolean", description: "Print o200k_base token counts before and after (stderr with --json)" },
    budget: { type: "string", value: "N", description: "Token budget of --mode auto (default: the config's token_budget, 8000)" },
    ...CACHE_DIR_OPTION,
  },
  async run(ctx) {
    const config = await renderConfig(ctx);
    const mode = parseMode(ctx.values.mode, config.mode);
    const budget = positiveIntOption(ctx.values, "budget") ?? config.token_budget;
    const { text, source } = await readInput(ctx);
    const input = ctx.values.input as string | undefined;
    const rendered = await renderRecorded({
      text,
      source,
      server: (recorded) => {
        const server =
          (ctx.values.server as string | undefined) ??
          recorded ??
          (input !== undefined && input !== "-" ? path.basename(input).replace(/\.json$/i, "") : undefined);
        if (server === undefined) throw usageError("render: reading stdin, the server name cannot be guessed: pass --server NAME");
        return server;
      },
      config,
      mode,
      tokenBudget: budget,
      cacheFile: cacheFileFor(ctx, config.source === "<built-in>" ? undefined : config),
      env: ctx.io.env,
      logger: ctx.logger,
      signal: ctx.io.signal,
      // With --json, stdout is the list alone and stderr stays quiet unless --tokens asks for figures.
      measure: { auto: !ctx.values.json || ctx.values.tokens === true, tokens: ctx.values.tokens === true },
    });
    const { listed, auto, tokens: report } = rendered;
    if (auto !== undefined) {
      const extra = auto.extra.length > 0 ? ` + ${auto.extra.length} tool${auto.extra.length === 1 ? "" : "s"}` : "";
      const note = `auto: ${auto.view}${extra}, ${formatCount(auto.tokens)} of ${formatCount(budget)} tokens`;
      writeLine(ctx.values.json ? ctx.io.stderr : ctx.io.stdout, note);
    }
    if (ctx.values.json) {
      writeLine(ctx.io.stdout, JSON.stringify({ tools: listed }));
    } else {
      for (const tool of listed) {
        writeLine(ctx.io.stdout, tool.name);
        if (tool.description) writeLine(ctx.io.stdout, tool.description.replace(/^/gm, "    "));
        writeLine(ctx.io.stdout, `    schema: ${JSON.stringify(tool.inputSchema)}`);
      }
    }
    if (report !== undefined) {
      const out = ctx.values.json ? ctx.io.stderr : ctx.io.stdout;
      writeLine(
        out,
        formatTable(
          ["mode", "tools listed", "o200k tokens", "share of full"],
          MODES.map((m) => [m + (m === mode ? " *" : ""), String(report[m].listed), formatCount(report[m].openAiTokens), formatShare(report[m].ratioOfFull)]),
          ["left", "right", "right", "right"],
        ),
      );
      writeLine(out, `tokens before -> after (${mode}): ${formatCount(report.full.openAiTokens)} -> ${formatCount(report[mode].openAiTokens)}`);
    }
    return ExitCode.OK;
  },
};
