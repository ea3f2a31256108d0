import { parseArgs } from "node:util";
import { loadConfig } from "../config/loadConfig.js";
import { type AbridgeError, ErrorCode, toAbridgeError } from "../model/errors.js";
import { LOG_LEVELS, SecretSet, type LogLevel } from "../log/logger.js";
import { createAdjustableLogger, recordingLogger } from "./adjustableLogger.js";
import { VERSION } from "../model/version.js";
import { outputClosed, writeLine, type CliIo } from "./cliIo.js";
import { ExitCode, type CommandContext, type CommandSpec, type OptionSpec } from "./command.js";
import { COMMAND_ENTRIES, loadCommands, type CommandEntry } from "./commands/index.js";
import { didYouMean } from "../util/suggest.js";

/** Options every command accepts. */
export const GLOBAL_OPTIONS: Record<string, OptionSpec> = {
  config: { type: "string", short: "c", value: "FILE", description: "Config file (abridge.toml or mcp.json)" },
  "log-level": { type: "string", value: "LEVEL", description: `Log level on stderr: ${LOG_LEVELS.join("|")}` },
  "log-json": { type: "boolean", description: "Log one JSON object per line" },
  help: { type: "boolean", short: "h", description: "Show help" },
};

/** How many arguments global flag `arg` takes up (2 with a separate value, else 1), or 0 when `arg` is no global flag. */
function globalFlagLength(arg: string): number {
  for (const [name, option] of Object.entries(GLOBAL_OPTIONS)) {
    if (arg === `--${name}` || (option.short !== undefined && arg === `-${option.short}`)) return option.type === "string" ? 2 : 1;
    if (arg.startsWith(`--${name}=`)) return 1;
  }
  return 0;
}

/**
 * Finds the command words in `argv`. Global options may come first (`abridge --config x.toml
 * tools`), so they and their values are stepped over; any other flag ends the command words, since
 * what follows it belongs to the command.
 */
function findCommand(argv: string[]): { entry: CommandEntry | undefined; rest: string[]; words: string[]; stop: string | undefined } {
  const found: { word: string; index: number }[] = [];
  let stop: string | undefined;
  for (let i = 0; i < argv.length; ) {
    const arg = argv[i] ?? "";
    if (arg.startsWith("-")) {
      const length = globalFlagLength(arg);
      if (length === 0) {
        stop = arg;
        break;
      }
      i += length;
      continue;
    }
    found.push({ word: arg, index: i });
    i++;
  }
  const words = found.map((f) => f.word);
  // Longest matching command path wins (`summarize warm` over `summarize`).
  for (let n = words.length; n > 0; n--) {
    const entry = COMMAND_ENTRIES.find((c) => c.path.length === n && c.path.every((w, i) => w === words[i]));
    if (entry) {
      // By position, not by value: a flag's value may spell a command word (`--config tools tools`).
      const used = new Set(found.slice(0, n).map((f) => f.index));
      return { entry, rest: argv.filter((_arg, i) => !used.has(i)), words, stop };
    }
  }
  const used = new Set(found.map((f) => f.index));
  return { entry: undefined, rest: argv.filter((_arg, i) => !used.has(i)), words, stop };
}

/** A negative number (`-5`, `-0.5`, `-1e3`): as an argument, a value and never a flag. */
const NEGATIVE_NUMBER = /^-(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i;

/**
 * `args` with each negative number that follows a flag taking a value joined to it
 * (`--budget -5` becomes `--budget=-5`): parseArgs takes any argument starting with a dash for a
 * flag, and would refuse `--budget` as missing its value instead of refusing -5 as out of range.
 */
function joinNegativeValues(args: readonly string[], options: Record<string, OptionSpec>): string[] {
  const joined: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] ?? "";
    if (arg === "--") {
      joined.push(...args.slice(i));
      break;
    }
    const name = Object.entries(options).find(([long, o]) => arg === `--${long}` || (o.short !== undefined && arg === `-${o.short}`))?.[0];
    const next = args[i + 1];
    if (name !== undefined && options[name]?.type === "string" && next !== undefined && NEGATIVE_NUMBER.test(next)) {
      joined.push(`--${name}=${next}`);
      i++;
      continue;
    }
    joined.push(arg);
  }
  return joined;
}

function optionLines(options: Record<string, OptionSpec>): string[] {
  return Object.entries(options).map(([name, o]) => {
    const flag = `${o.short ? `-${o.short}, ` : "    "}--${name}${o.value ? ` ${o.value}` : ""}`;
    return `  ${flag.padEnd(30)} ${o.description}`;
  });
}

/** Help of the whole CLI (loads every command for its summary). */
export async function mainHelp(): Promise<string> {
  const commands = await loadCommands();
  const width = Math.max(...commands.map((c) => c.path.join(" ").length));
  return [
    `abridge ${VERSION}: an MCP bridge that makes large tool surfaces cheap for language models`,
    "",
    "Usage: abridge <command> [options]",
    "",
    "Commands:",
    ...commands.map((c) => `  ${c.path.join(" ").padEnd(width)}  ${c.summary}`),
    "",
    "Options:",
    ...optionLines(GLOBAL_OPTIONS),
    `  ${"-V, --version".padEnd(30)} Print the version`,
    "",
    "Run `abridge <command> --help` for a command's options.",
  ].join("\n");
}

/** Usage line of one command. */
export function commandUsage(spec: CommandSpec): string {
  return `Usage: abridge ${spec.path.join(" ")}${spec.args ? ` ${spec.args}` : ""} [options]`;
}

/** Help of one command. */
export function commandHelp(spec: CommandSpec): string {
  return [
    `${commandUsage(spec)}`,
    "",
    spec.summary,
    ...(spec.details ? ["", spec.details] : []),
    "",
    "Options:",
    ...optionLines({ ...(spec.options ?? {}), ...GLOBAL_OPTIONS }),
  ].join("\n");
}

async function groupHelp(prefix: string[]): Promise<string | undefined> {
  const entries = COMMAND_ENTRIES.filter((c) => prefix.every((w, i) => c.path[i] === w) && c.path.length > prefix.length);
  if (entries.length === 0) return undefined;
  const members = await loadCommands(entries);
  return [`Usage: abridge ${prefix.join(" ")} <command> [options]`, "", "Commands:", ...members.map((c) => `  ${c.path.join(" ")}  ${c.summary}`)].join("\n");
}

/** Where a wrong or missing command word is pointed. */
const COMMANDS_HINT = "Run `abridge --help` for the list of commands.";

/**
 * A wrong command line: the message ending with `[USAGE]` like every other error (scripts and
 * users find the code in one place), then `hint` (the usage line) when given. Exit code 2.
 */
function usageFailure(io: CliIo, message: string, hint?: string): number {
  writeLine(io.stderr, `${message} [${ErrorCode.USAGE}]`);
  if (hint !== undefined) writeLine(io.stderr, hint);
  return ExitCode.USAGE;
}

/**
 * Runs the abridge CLI with the given arguments (without `node` and the script) and returns the
 * exit code (see {@link ExitCode}): 0 success, 1 the operation failed, 2 bad usage or config,
 * 130 interrupted.
 */
export async function runCli(argv: string[], io: CliIo): Promise<number> {
  if (argv.length === 0) {
    const code = usageFailure(io, "abridge: expected a command");
    writeLine(io.stderr, await mainHelp());
    return code;
  }
  if (argv[0] === "--version" || argv[0] === "-V") {
    writeLine(io.stdout, VERSION);
    return ExitCode.OK;
  }
  if (argv[0] === "--help" || argv[0] === "-h" || argv[0] === "help") {
    writeLine(io.stdout, await mainHelp());
    return ExitCode.OK;
  }

  const { entry, rest, words, stop } = findCommand(argv);
  if (!entry) {
    const group = words.length > 0 ? await groupHelp(words) : undefined;
    const asked = rest.includes("--help") || rest.includes("-h");
    if (group && (stop === undefined || asked)) {
      if (asked) {
        writeLine(io.stdout, group);
        return ExitCode.OK;
      }
      return usageFailure(io, `abridge ${words.join(" ")}: expected one of its commands`, group);
    }
    if (words.length === 0 && asked) {
      writeLine(io.stdout, await mainHelp());
      return ExitCode.OK;
    }
    if (words.length === 0) {
      return usageFailure(io, `abridge: expected a command${stop !== undefined ? ` before "${stop}"` : ""}`, COMMANDS_HINT);
    }
    const typed = words.join(" ");
    const hint = didYouMean(
      typed,
      COMMAND_ENTRIES.map((c) => c.path.join(" ")),
    );
    return usageFailure(io, `abridge: unknown command "${typed}"${hint ? `; did you mean "${hint}"?` : ""}`, COMMANDS_HINT);
  }
  // Only now, and only this command: the others' modules are never loaded (see commands/index.ts).
  const spec = await entry.load();

  const options = { ...GLOBAL_OPTIONS, ...(spec.options ?? {}) };
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({
      args: joinNegativeValues(rest, options),
      options: Object.fromEntries(
        Object.entries(options).map(([name, o]) => [name, { type: o.type, ...(o.short ? { short: o.short } : {}), ...(o.multiple ? { multiple: true } : {}) }]),
      ),
      allowPositionals: true,
      strict: true,
    });
  } catch (err) {
    // One line, like every other error: parseArgs words some of its messages over several.
    const message = (err instanceof Error ? err.message.replace(/\. To specify a positional.*$/s, "") : String(err)).replace(/\s*\n\s*/g, " ");
    const flag = /'(--?[\w-]+)/.exec(message)?.[1]?.replace(/^-+/, "");
    // Only for a flag not known: one that exists (given without its value) needs no other name.
    const known = flag !== undefined && Object.entries(options).some(([name, o]) => name === flag || o.short === flag);
    const hint = flag !== undefined && !known ? didYouMean(flag, Object.keys(options)) : undefined;
    return usageFailure(io, `abridge ${spec.path.join(" ")}: ${message}${hint ? `; did you mean "--${hint}"?` : ""}`, commandUsage(spec));
  }

  const values = parsed.values as CommandContext["values"];
  if (values.help) {
    writeLine(io.stdout, commandHelp(spec));
    return ExitCode.OK;
  }
  const range = spec.positionals ?? { min: 0, max: 0 };
  if (parsed.positionals.length < range.min || parsed.positionals.length > range.max) {
    const got = parsed.positionals.length;
    return usageFailure(
      io,
      `abridge ${spec.path.join(" ")}: expected ${range.min === range.max ? range.min : `${range.min} to ${range.max}`} argument(s)${spec.args ? ` (${spec.args})` : ""}, got ${got}${got > range.max ? `: ${parsed.positionals.slice(range.max).join(" ")}` : ""}`,
      commandUsage(spec),
    );
  }

  const level = (values["log-level"] as string | undefined) ?? io.env.ABRIDGE_LOG_LEVEL;
  if (level !== undefined && !(LOG_LEVELS as readonly string[]).includes(level)) {
    const from = values["log-level"] === undefined ? "$ABRIDGE_LOG_LEVEL" : "--log-level";
    return usageFailure(io, `abridge: ${from}: expected one of ${LOG_LEVELS.join(", ")}, got "${level}"`, commandUsage(spec));
  }
  const secrets = new SecretSet();
  const logger = createAdjustableLogger({
    level: (level as LogLevel | undefined) ?? "warn",
    sink: (line) => writeLine(io.stderr, line),
    secrets,
    json: values["log-json"] === true,
  });

  const ctx: CommandContext = {
    io,
    values,
    positionals: parsed.positionals,
    logger,
    secrets,
    loadConfig: async () => {
      // What the loader says waits for the config's log_level; `--log-level` and
      // $ABRIDGE_LOG_LEVEL, already applied, win over it.
      const held = recordingLogger();
      try {
        const config = await loadConfig({ configPath: values.config as string | undefined, cwd: io.cwd, env: io.env, secrets, logger: held.logger });
        if (level === undefined) logger.setLevel(config.log_level ?? "warn");
        return config;
      } finally {
        held.replay(logger);
      }
    },
  };
  try {
    return await spec.run(ctx);
  } catch (err) {
    // The reader of stdout is gone (`| head`): it has what it wanted, and the rest is nobody's to read.
    if (outputClosed(io.signal)) return ExitCode.OK;
    const error = toAbridgeError(err);
    writeLine(io.stderr, secrets.redact(`abridge: ${error.message} [${error.code}]`));
    // A wrong value of an option or argument is a command-line error like the parser's own.
    if (error.code === ErrorCode.USAGE) writeLine(io.stderr, commandUsage(spec));
    if (error.code === ErrorCode.INTERNAL && err instanceof Error && err.stack) {
      logger.debug("stack", { stack: err.stack });
    }
    if (io.signal.aborted) return ExitCode.INTERRUPTED;
    return exitCodeFor(error);
  }
}

/** Exit code of an error that ended a command. */
export function exitCodeFor(error: AbridgeError): number {
  switch (error.code) {
    case ErrorCode.USAGE:
    case ErrorCode.CONFIG_INVALID:
    case ErrorCode.CONFIG_NOT_FOUND:
    case ErrorCode.CONFIG_ENV_MISSING:
    case ErrorCode.INPUT_INVALID:
      return ExitCode.USAGE;
    case ErrorCode.CANCELLED:
      return ExitCode.INTERRUPTED;
    case ErrorCode.CONFIG_RECURSION:
      // Only this process's own refusal (it names the config): the parent reads the code as that.
      // A server of ours that refused (`call` to it) is a failed operation like any other.
      return error.details?.["config"] !== undefined ? ExitCode.RECURSION : ExitCode.FAILURE;
    default:
      return ExitCode.FAILURE;
  }
}
