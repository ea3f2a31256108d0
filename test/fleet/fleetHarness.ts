/**
 * Bridges of a "fleet" for the shared-cache tests: each host is a real Bridge with its own temp
 * dir (local cache file, state dir, spool) and one Redis shared by all, talking to a real echo
 * fixture server. Closed, with their children checked gone, by {@link closeHosts}.
 */
import path from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, expect } from "vitest";
import { parseConfigText } from "../../src/config/parseConfigText.js";
import { Bridge, type BridgeOptions } from "../../src/core/bridge.js";
import { createLogger } from "../../src/log/logger.js";
import { tempDir, waitForNoMarkedPids } from "../helpers/cliHarness.js";
import { startFakeOpenAi, type FakeOpenAi } from "../helpers/fakeOpenAi.js";
import { alivePids, fixtureCommand, killAll } from "../helpers/processes.js";
import { startRedis, type RedisServer } from "../helpers/redisServer.js";

/** One host of the fleet. */
export interface Host {
  bridge: Bridge;
  dir: string;
  lines: string[];
}

const hosts: { bridge: Bridge; cleanup: () => Promise<void>; pids: Set<number> }[] = [];

/** TOML of a fleet host: the shared cache, an echo server with `tools` generated tools, `extra` lines. */
export function fleetToml(options: { cacheUrl: string; marker: string; tools: number; extra?: string[]; summary?: string[] }): string {
  const { command, args } = fixtureCommand("echoServer.ts", ["--tools", String(options.tools), "--name", options.marker]);
  return [
    `cache_url = ${JSON.stringify(options.cacheUrl)}`,
    "startup_grace_ms = 30000",
    ...(options.extra ?? []),
    "[summary]",
    ...(options.summary ?? []),
    "[servers.echo]",
    `command = ${JSON.stringify(command)}`,
    `args = ${JSON.stringify(args)}`,
    "",
  ].join("\n");
}

/** Opens a host from `toml` (not started). */
export async function openHost(toml: string, options: Partial<Omit<BridgeOptions, "config">> = {}): Promise<Host> {
  const { dir, cleanup } = await tempDir("abridge-fleet-");
  const lines: string[] = [];
  const logger = createLogger({ level: "debug", sink: (line) => lines.push(line) });
  const config = parseConfigText(toml, { file: path.join(dir, "abridge.toml"), env: {} });
  const bridge = await Bridge.open({
    changeDebounceMs: 50,
    stateDir: path.join(dir, "state"),
    ...options,
    config,
    cacheFile: path.join(dir, "cache", "summaries.jsonl"),
    env: {},
    logger,
  });
  const pids = new Set<number>();
  bridge.onStatus(() => {
    for (const pid of bridge.childPids()) pids.add(pid);
  });
  hosts.push({ bridge, cleanup, pids });
  return { bridge, dir, lines };
}

/** Closes every host opened since the last call and checks no child outlived its bridge. */
export async function closeHosts(): Promise<void> {
  const closing = hosts.splice(0);
  for (const { bridge, pids } of closing) for (const pid of bridge.childPids()) pids.add(pid);
  await Promise.all(closing.map(({ bridge }) => bridge.close()));
  await Promise.all(closing.map(({ cleanup }) => cleanup()));
  const alive = alivePids(closing.flatMap(({ pids }) => [...pids]));
  killAll(alive);
  expect(alive, "child processes left behind after close()").toEqual([]);
}

/** What one fleet test starts: a temporary folder, a marker for its upstreams' command lines, an OpenAI-compatible test server. */
export interface FleetCase {
  dir: string;
  marker: string;
  llm: FakeOpenAi;
  cleanup: () => Promise<void>;
}

/** `prefix` starts the marker (`<prefix>-<folder>`). */
export async function openFleetCase(prefix: string): Promise<FleetCase> {
  const { dir, cleanup } = await tempDir();
  try {
    return { dir, cleanup, marker: `${prefix}-${path.basename(dir)}`, llm: await startFakeOpenAi() };
  } catch (err) {
    await cleanup();
    throw err;
  }
}

/** Ends what a case started (its hosts, its LLM server, its folder) and checks no marked upstream outlived it. */
export async function closeFleetCase(fleetCase: FleetCase): Promise<void> {
  await closeHosts();
  await fleetCase.llm.close();
  const left = await waitForNoMarkedPids(fleetCase.marker);
  killAll(left);
  expect(left, "upstreams left behind").toEqual([]);
  await fleetCase.cleanup();
}

/** A fleet test's case with the Redis its file shares. */
export interface FleetSetup extends FleetCase {
  redis: RedisServer;
}

/**
 * Registers a fleet test file's hooks: one Redis for the file, a {@link FleetCase} per test handed
 * to `bind` before the test runs, and `beforeClose` (e.g. killing a child the test started) run
 * before the case is closed.
 */
export function useFleet(prefix: string, bind: (setup: FleetSetup) => void, beforeClose?: () => void | Promise<void>): void {
  let redis: RedisServer | undefined;
  let fleetCase: FleetCase | undefined;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => redis?.destroy());
  beforeEach(async () => {
    fleetCase = await openFleetCase(prefix);
    bind({ ...fleetCase, redis: redis! });
  });
  afterEach(async () => {
    await beforeClose?.();
    if (fleetCase !== undefined) await closeFleetCase(fleetCase);
    fleetCase = undefined;
  });
}
