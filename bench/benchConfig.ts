import { createRequire } from "node:module";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { parseConfigText } from "../src/config/parseConfigText.js";
import type { Config } from "../src/config/schema.js";
import { REPO_ROOT } from "./corpus.js";

/** The echo fixture the tests use: tools `echo`, `add` and `--tools N` generated ones. */
export const ECHO_FIXTURE = path.join(REPO_ROOT, "test", "fixtures", "echoServer.ts");
/** A stdio MCP echo with no SDK on its side (newline-delimited JSON-RPC by hand). */
export const RAW_ECHO_FIXTURE = path.join(REPO_ROOT, "test", "fixtures", "rawEchoServer.ts");
/** A stdio server that answers `tools/list` with one recorded corpus file (bench/fixtures). */
export const CORPUS_FIXTURE = path.join(REPO_ROOT, "bench", "fixtures", "corpusServer.ts");
/** The CLI entry, run as `node --import tsx`. */
export const CLI_BIN = path.join(REPO_ROOT, "src", "cli", "bin.ts");

/**
 * The tsx loader as an absolute file URL: a bare `--import tsx` resolves from the child's working
 * directory, and the daemon runs detached from elsewhere, where it would not be found.
 */
const TSX_LOADER = pathToFileURL(createRequire(path.join(REPO_ROOT, "package.json")).resolve("tsx")).href;

/** Command and args that run a TypeScript file with tsx under this Node (no npx start-up cost). */
export function tsxCommand(file: string, args: readonly string[] = []): { command: string; args: string[] } {
  return { command: process.execPath, args: ["--import", TSX_LOADER, file, ...args] };
}

/** TOML of one stdio server running `file` with tsx. */
export function stdioServerToml(name: string, file: string, args: readonly string[] = []): string {
  const { command, args: argv } = tsxCommand(file, args);
  return `[servers.${JSON.stringify(name)}]\ncommand = ${JSON.stringify(command)}\nargs = ${JSON.stringify(argv)}\nconnect_timeout_ms = 120000\n`;
}

/** TOML of a whole config: `mode`, then the servers. */
export function configToml(servers: readonly string[], mode = "compact"): string {
  return [`mode = ${JSON.stringify(mode)}`, 'log_level = "error"', "", ...servers].join("\n");
}

/** Parses `toml` as if it were the file `file` (the bench builds configs in memory). */
export function benchConfig(toml: string, file: string): Config {
  return parseConfigText(toml, { file, env: {} });
}
