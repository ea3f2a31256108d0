/**
 * Command and args that run the abridge CLI from source with tsx, from any working directory: for
 * configs where abridge is itself an upstream (abridge in front of abridge).
 */
import { createRequire } from "node:module";
import { fileURLToPath, pathToFileURL } from "node:url";

/** The CLI entry run from source. */
const BIN = fileURLToPath(new URL("../../src/cli/bin.ts", import.meta.url));
/** tsx's loader as a file URL, so `--import` resolves from any cwd (a config's temp folder). */
const TSX_LOADER = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;

/** `node --import tsx src/cli/bin.ts ...args`, as a command and its arguments. */
export function abridgeCommand(args: readonly string[]): { command: string; args: string[] } {
  return { command: process.execPath, args: ["--import", TSX_LOADER, BIN, ...args] };
}

/** A TOML `[servers.<name>]` entry that runs abridge with `args`. */
export function abridgeServerToml(name: string, args: readonly string[], extra = ""): string {
  const { command, args: argv } = abridgeCommand(args);
  return `${[`[servers.${name}]`, `command = ${JSON.stringify(command)}`, `args = ${JSON.stringify(argv)}`, extra].join("\n")}\n`;
}
