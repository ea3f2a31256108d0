/**
 * Test helpers for child processes: run a TypeScript fixture with tsx (as `node --import tsx`
 * via `process.execPath`, which skips npx's start-up cost), build a ServerConfig for it, and
 * check that pids are gone.
 */
import { spawn } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import { createRequire } from "node:module";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { ServerConfig } from "../../src/config/schema.js";
import { isPidAlive } from "../../src/upstream/process/childStdioTransport.js";

const FIXTURES = fileURLToPath(new URL("../fixtures/", import.meta.url));

/** Absolute path of a fixture file, e.g. `fixturePath("echoServer.ts")`. */
export function fixturePath(file: string): string {
  return `${FIXTURES}${file}`;
}

/**
 * tsx's loader as a file URL: `--import tsx` is resolved from the child's working directory, which
 * for a server from a config file is the config's folder (a temp dir in tests), where tsx is not.
 */
const TSX_LOADER = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;

/** Command and args that run a fixture with tsx, from any working directory. */
export function fixtureCommand(file: string, args: readonly string[] = []): { command: string; args: string[] } {
  return { command: process.execPath, args: ["--import", TSX_LOADER, fixturePath(file), ...args] };
}

/**
 * A complete stdio {@link ServerConfig} (config defaults filled in), pointing at a fixture unless
 * `overrides` sets its own command.
 */
export function fixtureServer(name: string, file: string, args: readonly string[] = [], overrides: Partial<ServerConfig> = {}): ServerConfig {
  return serverConfig({ name, ...fixtureCommand(file, args), ...overrides });
}

/** A {@link ServerConfig} with the config file's defaults, for tests that build configs by hand. */
export function serverConfig(fields: Partial<ServerConfig> & { name: string }): ServerConfig {
  return {
    transport: fields.url !== undefined ? "http" : "stdio",
    args: [],
    env: {},
    headers: {},
    deny: [],
    timeout_ms: 30_000,
    connect_timeout_ms: 20_000,
    max_pending_requests: 1_000,
    enabled: true,
    prefix: true,
    sandbox_network: false,
    sandbox_write: [],
    sandbox_read: [],
    lifecycle: "persistent",
    read_only: false,
    destructive: "allow",
    sandbox: "none",
    max_output_bytes: 200_000,
    spill: false,
    result_format: "compact",
    result_format_tools: {},
    structured: "both",
    ...fields,
  };
}

/** Spawns a fixture directly (not through the pool), stdio piped. */
export function spawnFixture(file: string, args: readonly string[] = []): ChildProcess {
  const { command, args: argv } = fixtureCommand(file, args);
  return spawn(command, argv, { stdio: ["pipe", "pipe", "pipe"] });
}

/** True while `pid` exists (`kill(pid, 0)` probes; ESRCH means gone). */
export const isAlive = isPidAlive;

/** The pids of `pids` that still exist. */
export function alivePids(pids: readonly number[]): number[] {
  return pids.filter(isAlive);
}

/** Kills (SIGKILL) whatever of `pids` is still alive: last-resort cleanup in afterEach. */
export function killAll(pids: readonly number[]): void {
  for (const pid of alivePids(pids)) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // Gone in between.
    }
  }
}
