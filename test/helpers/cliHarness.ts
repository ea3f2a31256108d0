/**
 * Runs `runCli` in-process with captured streams, and finds processes by a marker in their command
 * line (to prove a command left no child behind).
 */
import { readdirSync, readFileSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { PassThrough, Readable } from "node:stream";
import { runCli } from "../../src/cli/runCli.js";
import { fixtureCommand } from "./processes.js";
import { waitFor } from "./waitFor.js";

/** What a CLI run printed and returned. */
export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Options of {@link runAbridge}. */
export interface RunOptions {
  cwd?: string;
  env?: Record<string, string | undefined>;
  stdin?: string;
  signal?: AbortSignal;
  isTTY?: boolean;
}

/** Runs the CLI with `argv` and returns its exit code and output. */
export async function runAbridge(argv: string[], options: RunOptions = {}): Promise<CliResult> {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  stdout.on("data", (b: Buffer) => out.push(b));
  stderr.on("data", (b: Buffer) => err.push(b));
  const code = await runCli(argv, {
    stdout,
    stderr,
    stdin: Readable.from(options.stdin !== undefined ? [options.stdin] : []),
    // A clean environment: no ABRIDGE_CONFIG or cache dir leaks in from the machine.
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...options.env },
    cwd: options.cwd ?? process.cwd(),
    signal: options.signal ?? new AbortController().signal,
    isTTY: options.isTTY ?? false,
  });
  return { code, stdout: Buffer.concat(out).toString("utf8"), stderr: Buffer.concat(err).toString("utf8") };
}

/** A temp dir removed by the returned cleanup. */
export async function tempDir(prefix = "abridge-test-"): Promise<{ dir: string; cleanup: () => Promise<void> }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), prefix));
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

/** TOML for a stdio server running a fixture with tsx. */
export function fixtureServerToml(name: string, file: string, args: readonly string[] = [], extra = ""): string {
  const { command, args: argv } = fixtureCommand(file, args);
  return `${[`[servers.${name}]`, `command = ${JSON.stringify(command)}`, `args = ${JSON.stringify(argv)}`, extra].join("\n")}\n`;
}

/**
 * The start-up grace of test configs. Fixture servers run under tsx and take seconds to start on a
 * loaded machine, past the default grace: tests of other things give them this long before a
 * first list (the grace ends as soon as every server is up). The grace itself is tested with its
 * own values.
 */
export const TEST_STARTUP_GRACE = "startup_grace_ms = 30000\n";

/** Writes `abridge.toml` into `dir` (with {@link TEST_STARTUP_GRACE} unless it sets one) and returns its path. */
export async function writeConfig(dir: string, toml: string): Promise<string> {
  const file = path.join(dir, "abridge.toml");
  await writeFile(file, toml.includes("startup_grace_ms") ? toml : TEST_STARTUP_GRACE + toml);
  return file;
}

/** Pids of live processes whose command line contains `marker`. */
export function pidsWithMarker(marker: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, "utf8");
      if (cmdline.includes(marker)) pids.push(Number(entry));
    } catch {
      // The process ended while we looked.
    }
  }
  return pids;
}

/**
 * Waits until no process carries `marker` (a served child ends its upstreams after its stdin
 * closes, which takes a moment), then returns what is still alive: `[]` when all are gone.
 */
export async function waitForNoMarkedPids(marker: string, timeoutMs = 10_000): Promise<number[]> {
  // A process's end is seen only in /proc: polled. Its caller asserts on what is left.
  await waitFor(() => pidsWithMarker(marker).length === 0, { what: `no process carrying ${marker}`, timeoutMs, intervalMs: 50 }).catch(() => undefined);
  return pidsWithMarker(marker);
}
