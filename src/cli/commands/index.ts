import type { CommandSpec } from "../command.js";

/**
 * A command's words and how to load it. Only the command that runs is loaded: each command module
 * imports what it runs with (serve the bridge and the MCP server, daemon its socket server and
 * client, bus the NATS client), and loading them all cost every command, `serve` included, the
 * module loading of all the others before it did anything.
 */
export interface CommandEntry {
  /** Words of the command, e.g. `["summarize", "warm"]` (the same as the spec's). */
  path: readonly string[];
  load(): Promise<CommandSpec>;
}

const entry = (words: string, load: () => Promise<CommandSpec>): CommandEntry => ({ path: words.split(" "), load });

/** Every command, in the order `--help` lists them. */
export const COMMAND_ENTRIES: readonly CommandEntry[] = [
  entry("serve", async () => (await import("./serveCommand.js")).serveCommand),
  entry("summarize warm", async () => (await import("./summarizeCommands.js")).summarizeWarmCommand),
  entry("summarize status", async () => (await import("./summarizeCommands.js")).summarizeStatusCommand),
  entry("render", async () => (await import("./renderCommand.js")).renderCommand),
  entry("servers", async () => (await import("./serversCommand.js")).serversCommand),
  entry("tools", async () => (await import("./toolsCommand.js")).toolsCommand),
  entry("search", async () => (await import("./searchCommand.js")).searchCommand),
  entry("record", async () => (await import("./recordCommand.js")).recordCommand),
  entry("call", async () => (await import("./callCommand.js")).callCommand),
  entry("run", async () => (await import("./runCommand.js")).runCommand),
  entry("cache verify", async () => (await import("./cacheCommands.js")).cacheVerifyCommand),
  entry("cache compact", async () => (await import("./cacheCommands.js")).cacheCompactCommand),
  entry("cache clear", async () => (await import("./cacheCommands.js")).cacheClearCommand),
  entry("cache export", async () => (await import("./cacheCommands.js")).cacheExportCommand),
  entry("cache import", async () => (await import("./cacheCommands.js")).cacheImportCommand),
  entry("daemon", async () => (await import("./daemonCommand.js")).daemonCommand),
  entry("daemon start", async () => (await import("./daemonCommand.js")).daemonStartCommand),
  entry("daemon stop", async () => (await import("./daemonCommand.js")).daemonStopCommand),
  entry("daemon status", async () => (await import("./daemonCommand.js")).daemonStatusCommand),
  entry("bus", async () => (await import("./busCommand.js")).busCommand),
  entry("bus call", async () => (await import("./busCallCommand.js")).busCallCommand),
];

/**
 * Every command's spec, in the order `--help` lists them: loads every command module, which only
 * the help of the whole CLI (and of a command group) needs.
 */
export function loadCommands(entries: readonly CommandEntry[] = COMMAND_ENTRIES): Promise<CommandSpec[]> {
  return Promise.all(entries.map((e) => e.load()));
}
