import type { Config } from "../config/schema.js";
import { RECURSION_EXIT_CODE, SUMMARIZER_FAILED_EXIT_CODE } from "../model/exitCodes.js";
import type { Logger, SecretSet } from "../log/logger.js";
import type { CliIo } from "./cliIo.js";

/** One command-line option of a command. */
export interface OptionSpec {
  type: "string" | "boolean";
  short?: string;
  multiple?: boolean;
  /** Placeholder shown in help, e.g. `FILE`. */
  value?: string;
  description: string;
}

/** What a command's `run` receives. */
export interface CommandContext {
  io: CliIo;
  /** Parsed option values (global and the command's own). */
  values: Record<string, string | boolean | string[] | undefined>;
  positionals: string[];
  logger: Logger;
  /** Secret values resolved from the config; the logger redacts them. */
  secrets: SecretSet;
  /** Loads the config named by `--config` or found by the lookup order. */
  loadConfig(): Promise<Config>;
}

/** A command such as `servers` or `summarize warm`. */
export interface CommandSpec {
  /** Words of the command, e.g. `["summarize", "warm"]`. */
  path: string[];
  summary: string;
  /** Arguments after the command words, as shown in help (e.g. `<server> <tool>`). */
  args?: string;
  options?: Record<string, OptionSpec>;
  /** Number of positional arguments accepted. */
  positionals?: { min: number; max: number };
  /** Longer help text shown by `--help`. */
  details?: string;
  run(ctx: CommandContext): Promise<number>;
}

/**
 * Every exit code the CLI returns (the README's list follows this one; a test checks it). An
 * uncaught error and a command left pending with nothing to wait for end as 1 (`bin.ts`).
 */
export const ExitCode = {
  OK: 0,
  /** The operation ran and failed (an upstream failed, a call returned an error). */
  FAILURE: 1,
  /** Bad command line or bad config: nothing was done. */
  USAGE: 2,
  /**
   * `summarize warm`: every call to the summarizer failed; what was written is the extractive
   * fallback (`--allow-fallback` makes this 0).
   */
  SUMMARIZER_FAILED: SUMMARIZER_FAILED_EXIT_CODE,
  /**
   * Refused to start: an abridge above this one serves the same config (it lists abridge itself).
   * The parent abridge maps this code to that server's CONFIG_RECURSION error.
   */
  RECURSION: RECURSION_EXIT_CODE,
  /** Interrupted by SIGINT or SIGTERM (what was written stays written). */
  INTERRUPTED: 130,
  /** A second SIGTERM while the first one was being handled: ended at once. */
  TERMINATED: 143,
} as const;
