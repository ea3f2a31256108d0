/**
 * Shared set-up of the daemon tests: configs with fixture servers in temp dirs, in-process daemons
 * closed after each test (their upstream children checked gone), and a raw line-protocol socket.
 */
import { connect, type Socket } from "node:net";
import path from "node:path";
import { afterEach, expect } from "vitest";
import { parseConfigText } from "../../src/config/parseConfigText.js";
import type { Config } from "../../src/config/schema.js";
import { Daemon, type DaemonOptions } from "../../src/daemon/server/daemon.js";
import { parseAddress } from "../../src/daemon/wire/protocol.js";
import { createLogger, type Logger } from "../../src/log/logger.js";
import { fixtureServerToml, tempDir, TEST_STARTUP_GRACE } from "../helpers/cliHarness.js";
import { alivePids, killAll } from "../helpers/processes.js";

const daemons: Daemon[] = [];
const cleanups: (() => Promise<void>)[] = [];
const childPids = new Set<number>();
const rawClients: RawClient[] = [];

afterEach(async () => {
  for (const client of rawClients.splice(0)) client.close();
  await Promise.allSettled(daemons.splice(0).map((d) => d.close({ graceMs: 2_000 })));
  const left = alivePids([...childPids]);
  killAll(left);
  childPids.clear();
  for (const cleanup of cleanups.splice(0)) await cleanup();
  expect(left).toEqual([]);
});

/** A logger that keeps its lines. */
export function memoryLogger(): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  return { logger: createLogger({ level: "debug", sink: (line) => lines.push(line) }), lines };
}

/** TOML of the echo and slow fixtures (the default servers of these tests). */
export function fixtureServers(marker: string): string {
  return [
    fixtureServerToml("echo", "echoServer.ts", ["--tools", "2", "--marker", marker]),
    fixtureServerToml("slow", "slowServer.ts", ["--marker", marker]),
  ].join("\n");
}

/** A temp dir (removed after the test) with `abridge.toml` holding `servers` and a cache dir inside. */
export async function testSetup(servers?: string, extra = ""): Promise<{ dir: string; stateDir: string; configFile: string; config: Config }> {
  const { dir, cleanup } = await tempDir("abridge-daemon-");
  cleanups.push(cleanup);
  const configFile = path.join(dir, "abridge.toml");
  const grace = extra.includes("startup_grace_ms") ? "" : TEST_STARTUP_GRACE;
  const text = `${grace}cache_dir = ${JSON.stringify(path.join(dir, "cache"))}\n${extra}\n${servers ?? fixtureServers(dir)}`;
  const { writeFile } = await import("node:fs/promises");
  await writeFile(configFile, text);
  const config = parseConfigText(text, { file: configFile, env: {} });
  return { dir, stateDir: path.join(dir, "state"), configFile, config };
}

/** Starts an in-process daemon, closed after the test. */
export async function startDaemon(setup: { stateDir: string; config: Config; dir: string }, options: Partial<DaemonOptions> = {}): Promise<Daemon> {
  const result = await Daemon.start({
    config: setup.config,
    stateDir: setup.stateDir,
    cacheFile: path.join(setup.dir, "cache", "summaries.jsonl"),
    env: {},
    bridge: { backoff: { baseMs: 50, factor: 2, capMs: 500, resetAfterMs: 30_000 } },
    ...options,
  });
  if (result.status !== "started") throw new Error(`daemon did not start: held by ${result.holder.pid}`);
  const daemon = result.daemon;
  daemons.push(daemon);
  daemon.bridge.onStatus(() => {
    for (const pid of daemon.bridge.childPids()) childPids.add(pid);
  });
  return daemon;
}

/** A raw connection speaking the line protocol, for tests that need exact control of the bytes. */
export class RawClient {
  private buffer = "";
  private readonly lines: string[] = [];
  private waiters: ((line: string | undefined) => void)[] = [];
  private ended = false;
  readonly closed: Promise<void>;

  private constructor(readonly socket: Socket) {
    socket.setEncoding("utf8");
    socket.on("data", (text: string) => {
      this.buffer += text;
      let newline;
      while ((newline = this.buffer.indexOf("\n")) !== -1) {
        const line = this.buffer.slice(0, newline);
        this.buffer = this.buffer.slice(newline + 1);
        const waiter = this.waiters.shift();
        if (waiter) waiter(line);
        else this.lines.push(line);
      }
    });
    socket.on("error", () => undefined);
    this.closed = new Promise((resolve) =>
      socket.once("close", () => {
        this.ended = true;
        for (const waiter of this.waiters.splice(0)) waiter(undefined);
        resolve();
      }),
    );
  }

  /** Connects to a daemon's address. */
  static connect(address: string): Promise<RawClient> {
    const parsed = parseAddress(address);
    if (!parsed) throw new Error(`bad address ${address}`);
    return new Promise((resolve, reject) => {
      const socket = parsed.kind === "unix" ? connect({ path: parsed.path }) : connect({ host: parsed.host, port: parsed.port });
      socket.once("error", reject);
      socket.once("connect", () => {
        socket.off("error", reject);
        const client = new RawClient(socket);
        rawClients.push(client);
        resolve(client);
      });
    });
  }

  /** Writes an object (as one JSON line) or raw text as is. */
  send(message: Record<string, unknown> | string): void {
    this.socket.write(typeof message === "string" ? message : `${JSON.stringify(message)}\n`);
  }

  /** The next answer, parsed; undefined when the connection ended first. */
  async next(): Promise<Record<string, unknown> | undefined> {
    const line = this.lines.shift() ?? (this.ended ? undefined : await new Promise<string | undefined>((resolve) => this.waiters.push(resolve)));
    return line === undefined ? undefined : (JSON.parse(line) as Record<string, unknown>);
  }

  /** Sends and waits for the answer. */
  async request(message: Record<string, unknown>): Promise<Record<string, unknown>> {
    this.send(message);
    const answer = await this.next();
    if (!answer) throw new Error("connection closed before the answer");
    return answer;
  }

  close(): void {
    this.socket.destroy();
  }
}
