/**
 * Builds real Bridges from TOML for the policy and reliability tests: a temp dir per bridge (cache,
 * state, audit log), a logger that keeps its lines and waits on them, and after each test every
 * bridge closed and every child pid it ever had checked gone.
 */
import path from "node:path";
import { afterEach, expect } from "vitest";
import { parseConfigText } from "../../src/config/parseConfigText.js";
import type { Config } from "../../src/config/schema.js";
import { Bridge } from "../../src/core/bridge.js";
import type { BridgeOptions } from "../../src/core/bridge.js";
import { SecretSet, type Logger } from "../../src/log/logger.js";
import { tempDir } from "../helpers/cliHarness.js";
import { memoryLogger } from "../helpers/memoryLogger.js";
import { alivePids, fixtureCommand, killAll } from "../helpers/processes.js";

/** A bridge under test with its temp dir and log. */
export interface TestBridge {
  bridge: Bridge;
  config: Config;
  dir: string;
  /** The bridge's log (debug level), and of whatever else the test gives {@link logger}. */
  lines: string[];
  /** The bridge's logger, for parts a test starts beside it (an HTTP front end): their lines join {@link lines}. */
  logger: Logger;
  /** Resolves once `condition` over {@link lines} holds (checked now and on every line logged). */
  until(condition: () => boolean, what: string, timeoutMs?: number): Promise<void>;
  /** Current child pids, remembered for the after-test check. */
  pids(): number[];
}

const open: { bridge: Bridge; cleanup: () => Promise<void> }[] = [];
const seenPids = new Set<number>();

/** TOML of a stdio server running a fixture with tsx, `extra` lines appended. */
export function fixtureToml(name: string, file: string, args: readonly string[] = [], extra: readonly string[] = []): string {
  const { command, args: argv } = fixtureCommand(file, args);
  return [`[servers.${name}]`, `command = ${JSON.stringify(command)}`, `args = ${JSON.stringify(argv)}`, ...extra, ""].join("\n");
}

/**
 * Parses `toml` (relative paths resolve in the temp dir; `{dir}` is replaced by it), opens and
 * starts a Bridge with fast restarts.
 */
export async function startBridge(
  toml: string,
  options: Partial<Omit<BridgeOptions, "config">> & {
    env?: Record<string, string>;
    secrets?: SecretSet;
    /** Runs in the temp dir before the bridge opens (create folders the config names). */
    prepare?: (dir: string) => Promise<void>;
  } = {},
): Promise<TestBridge> {
  const { dir, cleanup } = await tempDir("abridge-policy-");
  const { prepare, secrets: _secrets, env: _env, ...bridgeOptions } = options;
  await prepare?.(dir);
  const secrets = options.secrets ?? new SecretSet();
  const { logger, lines, until } = memoryLogger({ secrets });
  const env = options.env ?? {};
  const config = parseConfigText(toml.replaceAll("{dir}", dir), { file: path.join(dir, "abridge.toml"), env, secrets });
  const bridge = await Bridge.open({
    changeDebounceMs: 10,
    backoff: { baseMs: 50, factor: 2, capMs: 500, resetAfterMs: 30_000 },
    stateDir: path.join(dir, "state"),
    ...bridgeOptions,
    config,
    cacheFile: options.cacheFile ?? path.join(dir, "cache", "summaries.jsonl"),
    env,
    logger,
  });
  open.push({ bridge, cleanup });
  const pids = (): number[] => {
    const now = bridge.childPids();
    for (const pid of now) seenPids.add(pid);
    return now;
  };
  bridge.onStatus(() => pids());
  await bridge.start();
  pids();
  return { bridge, config, dir, lines, logger, until, pids };
}

afterEach(async () => {
  const closing = open.splice(0);
  for (const { bridge } of closing) for (const pid of bridge.childPids()) seenPids.add(pid);
  await Promise.all(closing.map(({ bridge }) => bridge.close()));
  await Promise.all(closing.map(({ cleanup }) => cleanup()));
  const alive = alivePids([...seenPids]);
  seenPids.clear();
  killAll(alive);
  expect(alive, "child processes left behind after close()").toEqual([]);
});

/** The text of a result's content blocks, joined. */
export function resultText(result: { content?: unknown[] | undefined }): string {
  return (result.content ?? []).map((b) => ((b as { text?: unknown }).text as string | undefined) ?? "").join("\n");
}
