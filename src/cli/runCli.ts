import { parseArgs } from "node:util";
import { loadConfig } from "../config/loadConfig.js";
import { AbridgeError, ErrorCode, toAbridgeError } from "../errors.js";
import { createLogger, LOG_LEVELS, SecretSet, type LogLevel } from "../log/logger.js";
import { VERSION } from "../version.js";
import { writeLine, type CliIo } from "./cliIo.js";
import { ExitCode, type CommandContext, type CommandSpec, type OptionSpec } from "./command.js";
import { COMMANDS } from "./commands/index.js";
import { didYouMean } from "../util/suggest.js";

/** Options every command accepts. */
export const GLOBAL_OPTIONS: Record<string, OptionSpec> = {
  config: { type: "string", short: "c", value: "FILE", description: "Config file (abridge.toml or mcp.json)" },
  "log-level": { type: "string", value: "LEVEL", description: `Log level on stderr: ${LOG_LEVELS.join("|")}` },
  "log-json": { type: "boolean", description: "Log one JSON object per line" },
  help: { type: "boolean", short: "h", description: "Show help" },
};

function findCommand(argv: string[]): { spec: CommandSpec | undefined; rest: string[]; words: string[] } {
  const words: string[] = [];
  for (const arg of argv) {
    if (arg.startsWith("-")) break;
    words.push(arg);
  }
  // Longest matching command path wins (`summarize warm` over `summarize`).
  for (let n = words.length; n > 0; n--) {
    const spec = COMMANDS.find((c) => c.path.length === n && c.path.every((w, i) => w === words[i]));
    if (spec) {
      const rest = [...argv];
      for (const w of spec.path) rest.splice(rest.indexOf(w), 1);
      return { spec, rest, words };
    }
  }
  return { spec: undefined, rest: argv, words };
}

function optionLines(options: Record<string, OptionSpec>): string[] {
  return Object.entries(options).map(([name, o]) => {
    const flag = `${o.short ? `-${o.short}, ` : "    "}--${name}${o.value ? ` ${o.value}` : ""}`;
    return `  ${flag.padEnd(30)} ${o.description}`;
  });
}

/** Help of the whole CLI. */
export function mainHelp(): string {
  const width = Math.max(...COMMANDS.map((c) => c.path.join(" ").length));
  return [
    `abridge ${VERSION}: an MCP bridge that makes large tool surfaces cheap for language models`,
    "",
    "Usage: abridge <command> [options]",
    "",
    "Commands:",
    ...COMMANDS.map((c) => `  ${c.path.join(" ").padEnd(width)}  ${c.summary}`),
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

function groupHelp(prefix: string[]): string | undefined {
  const members = COMMANDS.filter((c) => prefix.every((w, i) => c.path[i] === w) && c.path.length > prefix.length);
  if (members.length === 0) return undefined;
  return [
    `Usage: abridge ${prefix.join(" ")} <command> [options]`,
    "",
    "Commands:",
    ...members.map((c) => `  ${c.path.join(" ")}  ${c.summary}`),
  ].join("\n");
}

/**
 * Runs the abridge CLI with the given arguments (without `node` and the script) and returns the
 * exit code: 0 success, 1 the operation failed, 2 bad usage or config, 130 interrupted.
 */
export async function runCli(argv: string[], io: CliIo): Promise<number> {
  if (argv.length === 0) {
    writeLine(io.stderr, mainHelp());
    return ExitCode.USAGE;
  }
  if (argv[0] === "--version" || argv[0] === "-V") {
    writeLine(io.stdout, VERSION);
    return ExitCode.OK;
  }
  if (argv[0] === "--help" || argv[0] === "-h" || argv[0] === "help") {
    writeLine(io.stdout, mainHelp());
    return ExitCode.OK;
  }

  const { spec, rest, words } = findCommand(argv);
  if (!spec) {
    const group = groupHelp(words);
    if (group && (words.length === argv.length || rest.includes("--help") || rest.includes("-h"))) {
      const asked = rest.includes("--help") || rest.includes("-h");
      writeLine(asked ? io.stdout : io.stderr, group);
      return asked ? ExitCode.OK : ExitCode.USAGE;
    }
    const typed = words.join(" ") || argv[0] || "";
    const hint = didYouMean(typed, COMMANDS.map((c) => c.path.join(" ")));
    writeLine(io.stderr, `abridge: unknown command "${typed}"${hint ? `; did you mean "${hint}"?` : ""}`);
    writeLine(io.stderr, "Run `abridge --help` for the list of commands.");
    return ExitCode.USAGE;
  }

  const options = { ...GLOBAL_OPTIONS, ...(spec.options ?? {}) };
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({
      args: rest,
      options: Object.fromEntries(
        Object.entries(options).map(([name, o]) => [
          name,
          { type: o.type, ...(o.short ? { short: o.short } : {}), ...(o.multiple ? { multiple: true } : {}) },
        ]),
      ),
      allowPositionals: true,
      strict: true,
    });
  } catch (err) {
    const message = err instanceof Error ? err.message.replace(/\. To specify a positional.*$/s, "") : String(err);
    const flag = /'(--?[\w-]+)/.exec(message)?.[1];
    const hint = flag ? didYouMean(flag.replace(/^-+/, ""), Object.keys(options)) : undefined;
    writeLine(io.stderr, `abridge ${spec.path.join(" ")}: ${message}${hint ? `; did you mean "--${hint}"?` : ""}`);
    writeLine(io.stderr, commandUsage(spec));
    return ExitCode.USAGE;
  }

  const values = parsed.values as CommandContext["values"];
  if (values.help) {
    writeLine(io.stdout, commandHelp(spec));
    return ExitCode.OK;
  }
  const range = spec.positionals ?? { min: 0, max: 0 };
  if (parsed.positionals.length < range.min || parsed.positionals.length > range.max) {
    const got = parsed.positionals.length;
    writeLine(
      io.stderr,
      `abridge ${spec.path.join(" ")}: expected ${range.min === range.max ? range.min : `${range.min} to ${range.max}`} argument(s)${spec.args ? ` (${spec.args})` : ""}, got ${got}${got > range.max ? `: ${parsed.positionals.slice(range.max).join(" ")}` : ""}`,
    );
    writeLine(io.stderr, commandUsage(spec));
    return ExitCode.USAGE;
  }

  const level = (values["log-level"] as string | undefined) ?? io.env.ABRIDGE_LOG_LEVEL;
  if (level !== undefined && !(LOG_LEVELS as readonly string[]).includes(level)) {
    writeLine(io.stderr, `abridge: --log-level: expected one of ${LOG_LEVELS.join(", ")}, got "${level}"`);
    return ExitCode.USAGE;
  }
  const secrets = new SecretSet();
  const logger = createLogger({
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
    loadConfig: () =>
      loadConfig({ configPath: values.config as string | undefined, cwd: io.cwd, env: io.env, secrets, logger }),
  };
  try {
    return await spec.run(ctx);
  } catch (err) {
    const error = toAbridgeError(err);
    writeLine(io.stderr, secrets.redact(`abridge: ${error.message} [${error.code}]`));
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
    default:
      return ExitCode.FAILURE;
  }
}
