/**
 * Load check (a bench script, not a test): N calls at concurrency C through `abridge serve --http`
 * and through the daemon to the echo fixture. Every answer must come back, to the call that
 * asked; the abridge process's RSS is sampled to show memory stays flat.
 *
 *   npx tsx bench/load.ts [--calls 20000] [--concurrency 64] [--only http|daemon|hostile]
 *
 * Prints one JSON line per front end: calls, lost, mismatched, seconds, calls/s, RSS (MiB) after
 * warm-up and after each tenth of the calls. Exits 1 when anything was lost or mismatched.
 *
 * Hostile cases (`--only hostile`, and in a full run): a daemon serving the echo fixture and the
 * hostile fixture, and healthy echo calls through it while, one case at a time, tokenless peers
 * flood it without newlines, hold hundreds of silent connections, an upstream pours 96 MiB onto
 * stderr without a newline, and a call carries a catastrophic `pattern` argument. One JSON line
 * per case: RSS before/after and peak, healthy calls answered and lost, their p50/p99; written
 * to bench/results/hostile.json too.
 */
import { spawn } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import { once } from "node:events";
import { readFileSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import type { Socket } from "node:net";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { lockFilePath, readLock, type LockInfo } from "../src/daemon/wire/lockfile.js";
import { parseAddress } from "../src/daemon/wire/protocol.js";
import { numberArg, stringArg } from "../test/fixtures/fixtureArgs.js";
import { floodWithoutNewline, openSilent } from "../test/fixtures/hostilePeer.js";
import { fixtureServerToml, tempDir, writeConfig } from "../test/helpers/cliHarness.js";
import { peakRssBytes } from "../test/helpers/procMemory.js";
import { BIN } from "../test/helpers/serveHarness.js";
import { messageOf } from "../src/model/errors.js";

// The SDK's streamable HTTP client adds an abort listener per request to one long-lived signal;
// at tens of thousands of calls Node prints thousands of MaxListenersExceededWarning lines from
// the client side of this script. Counted and reported once; other warnings still print.
let listenerWarnings = 0;
process.removeAllListeners("warning");
process.on("warning", (warning) => {
  if (warning.name === "MaxListenersExceededWarning") listenerWarnings += 1;
  else process.stderr.write(`${warning.name}: ${warning.message}\n`);
});
process.on("exit", () => {
  if (listenerWarnings > 0) process.stderr.write(`load: ${listenerWarnings} MaxListenersExceededWarning(s) in the HTTP client (client side, not abridge)\n`);
});

const CALLS = numberArg("calls", 20_000);
const CONCURRENCY = numberArg("concurrency", 64);
const ONLY = stringArg("only", "");

interface Outcome {
  frontEnd: string;
  calls: number;
  lost: number;
  mismatched: number;
  seconds: number;
  callsPerSecond: number;
  /** RSS of the abridge process after warm-up and after each tenth of the calls. */
  rssMiB: number[];
  pid: number;
  firstError?: string;
}

function rssMiB(pid: number): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return match ? Math.round(Number(match[1]) / 1024) : Number.NaN;
}

async function waitForStderr(child: ChildProcess, pattern: RegExp): Promise<RegExpExecArray> {
  let stderr = "";
  return new Promise((resolve, reject) => {
    child.stderr!.on("data", (b: Buffer) => {
      stderr += b.toString("utf8");
      const match = pattern.exec(stderr);
      if (match) resolve(match);
    });
    child.once("exit", (code) => reject(new Error(`exited with ${code}:\n${stderr}`)));
  });
}

/** Runs `CALLS` calls of `call(i)` at `CONCURRENCY`, checking each answer is the text sent. */
async function drive(frontEnd: string, pid: number, call: (i: number) => Promise<string>): Promise<Outcome> {
  const warmup = 500;
  for (let i = 0; i < warmup; i += CONCURRENCY) await Promise.all(Array.from({ length: CONCURRENCY }, (_, k) => call(-(i + k) - 1)));
  const rss = [rssMiB(pid)];
  const tenth = Math.max(1, Math.floor(CALLS / 10));
  let next = 0;
  let lost = 0;
  let mismatched = 0;
  let firstError: string | undefined;
  const started = performance.now();
  const worker = async (): Promise<void> => {
    for (;;) {
      const i = next++;
      if (i >= CALLS) return;
      if (i > 0 && i % tenth === 0) rss.push(rssMiB(pid));
      try {
        const text = await call(i);
        if (text !== `call-${i}`) mismatched++;
      } catch (err) {
        lost++;
        firstError ??= messageOf(err);
      }
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  const seconds = (performance.now() - started) / 1000;
  rss.push(rssMiB(pid));
  return {
    frontEnd,
    calls: CALLS,
    lost,
    mismatched,
    seconds: Math.round(seconds * 10) / 10,
    callsPerSecond: Math.round(CALLS / seconds),
    rssMiB: rss,
    pid,
    ...(firstError !== undefined ? { firstError } : {}),
  };
}

async function benchHttp(config: string): Promise<Outcome> {
  const child = spawn(process.execPath, ["--import", "tsx", BIN, "serve", "--config", config, "--http", "127.0.0.1:0", "--log-level", "warn"], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  try {
    const [, url] = await waitForStderr(child, /at (http:\/\/127\.0\.0\.1:\d+\/mcp)/);
    const client = new Client({ name: "load", version: "1" });
    await client.connect(new StreamableHTTPClientTransport(new URL(url!)));
    const outcome = await drive("serve --http", child.pid!, async (i) => {
      const result = await client.callTool({ name: "echo_echo", arguments: { text: `call-${i}` } });
      return (result.content as { text: string }[])[0]!.text;
    });
    await client.close();
    return outcome;
  } finally {
    child.kill("SIGTERM");
    if (child.exitCode === null) await once(child, "exit");
  }
}

/** One daemon connection per worker, requests answered in order on each. */
class LineConnection {
  private buffer = "";
  private readonly waiting: ((line: string) => void)[] = [];
  constructor(private readonly socket: Socket) {
    socket.setEncoding("utf8");
    socket.on("data", (text: string) => {
      this.buffer += text;
      let newline;
      while ((newline = this.buffer.indexOf("\n")) !== -1) {
        const line = this.buffer.slice(0, newline);
        this.buffer = this.buffer.slice(newline + 1);
        this.waiting.shift()?.(line);
      }
    });
  }
  request(body: Record<string, unknown>): Promise<Record<string, unknown>> {
    return new Promise((resolve) => {
      this.waiting.push((line) => resolve(JSON.parse(line) as Record<string, unknown>));
      this.socket.write(`${JSON.stringify(body)}\n`);
    });
  }
}

/** A daemon process on `config`, once it listens: the child and its TCP address from the lockfile. */
async function spawnDaemon(
  config: string,
  stateDir: string,
  logLevel: string,
): Promise<{ child: ChildProcess; address: { host: string; port: number }; lock: { lock: LockInfo } }> {
  const child = spawn(process.execPath, ["--import", "tsx", BIN, "daemon", "--config", config, "--state-dir", stateDir, "--log-level", logLevel], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  try {
    await waitForStderr(child, /listening on/);
    const lock = await readLock(lockFilePath(stateDir));
    if (lock.state !== "ok") throw new Error("no lockfile");
    const address = parseAddress(lock.lock.address);
    if (address?.kind !== "tcp") throw new Error(`unexpected address ${lock.lock.address}`);
    return { child, address, lock };
  } catch (err) {
    child.kill("SIGKILL");
    throw err;
  }
}

async function benchDaemon(config: string, stateDir: string): Promise<Outcome> {
  const { child, address, lock } = await spawnDaemon(config, stateDir, "warn");
  try {
    const sockets: Socket[] = [];
    const pool: LineConnection[] = [];
    for (let i = 0; i < CONCURRENCY; i++) {
      const socket = connect({ host: address.host, port: address.port });
      await once(socket, "connect");
      sockets.push(socket);
      pool.push(new LineConnection(socket));
    }
    let turn = 0;
    const outcome = await drive("daemon", child.pid!, async (i) => {
      const connection = pool[turn++ % pool.length]!;
      const answer = (await connection.request({
        op: "call_tool",
        server: "echo",
        tool: "echo",
        args: { text: `call-${i}` },
        id: i,
        token: lock.lock.token,
      })) as {
        ok: boolean;
        id?: number;
        result?: { content: { text: string }[] };
        error?: { message: string };
      };
      if (!answer.ok) throw new Error(answer.error?.message ?? "error");
      if (answer.id !== i) return `id ${answer.id} for call ${i}`;
      return answer.result!.content[0]!.text;
    });
    for (const socket of sockets) socket.destroy();
    return outcome;
  } finally {
    child.kill("SIGTERM");
    if (child.exitCode === null) await once(child, "exit");
  }
}

/** Figures of one hostile case. */
interface HostileOutcome {
  case: string;
  rssBeforeMiB: number;
  rssAfterMiB: number;
  /** Peak RSS of the daemon's whole life so far, after this case. */
  rssPeakMiB: number;
  healthyCalls: number;
  healthyLost: number;
  p50Ms: number;
  p99Ms: number;
  seconds: number;
  detail?: Record<string, unknown>;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return Math.round(sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]! * 10) / 10;
}

async function benchHostile(config: string, stateDir: string): Promise<HostileOutcome[]> {
  const { child, address, lock } = await spawnDaemon(config, stateDir, "error");
  try {
    const pool: LineConnection[] = [];
    const sockets: Socket[] = [];
    for (let i = 0; i < 8; i++) {
      const socket = connect({ host: address.host, port: address.port });
      await once(socket, "connect");
      sockets.push(socket);
      pool.push(new LineConnection(socket));
    }
    let id = 0;
    const call = async (server: string, tool: string, args: Record<string, unknown>): Promise<Record<string, unknown>> =>
      pool[id % pool.length]!.request({ token: lock.lock.token, op: "call_tool", server, tool, args, id: id++ });
    // Warm-up: both servers started, the catalog known.
    await call("echo", "echo", { text: "warm" });
    await call("hostile", "echo", { text: "warm" });
    /** Healthy echo calls, 8 at a time, while `attack` runs; at least `minimum` of them. */
    const measure = async (name: string, attack: () => Promise<Record<string, unknown> | undefined>, minimum = 400): Promise<HostileOutcome> => {
      const rssBefore = rssMiB(child.pid!);
      const latencies: number[] = [];
      let lost = 0;
      let attackDone = false;
      const started = performance.now();
      const attacking = attack().finally(() => (attackDone = true));
      const workers = Array.from({ length: 8 }, async () => {
        while (!attackDone || latencies.length + lost < minimum) {
          const t = performance.now();
          const answer = await call("echo", "echo", { text: "healthy" }).catch(() => undefined);
          if (answer?.ok === true) latencies.push(performance.now() - t);
          else lost++;
        }
      });
      const [detail] = await Promise.all([attacking, ...workers]);
      latencies.sort((a, b) => a - b);
      return {
        case: name,
        rssBeforeMiB: rssBefore,
        rssAfterMiB: rssMiB(child.pid!),
        rssPeakMiB: Math.round(peakRssBytes(child.pid!) / 1024 / 1024),
        healthyCalls: latencies.length,
        healthyLost: lost,
        p50Ms: percentile(latencies, 50),
        p99Ms: percentile(latencies, 99),
        seconds: Math.round((performance.now() - started) / 100) / 10,
        ...(detail ? { detail } : {}),
      };
    };
    const outcomes: HostileOutcome[] = [];
    outcomes.push(await measure("baseline (no attack)", async () => undefined));
    outcomes.push(
      await measure("100 tokenless connections x 4 MiB, no newline", async () => {
        const peer = await floodWithoutNewline(lock.lock.address, 100, 4 * 1024 * 1024);
        await peer.allClosed();
        return { sentMiB: Math.round(peer.sentBytes() / 1024 / 1024), closedByDaemon: peer.closedCount() };
      }),
    );
    outcomes.push(
      await measure("300 silent tokenless connections", async () => {
        const peer = await openSilent(lock.lock.address, 300);
        await peer.allClosed();
        return { opened: peer.opened, closedByDaemon: peer.closedCount() };
      }),
    );
    outcomes.push(
      await measure("upstream pours 96 MiB onto stderr, no newline", async () => {
        const answer = await call("hostile", "stderr_flood", { mb: 96 });
        return { ok: answer.ok };
      }),
    );
    outcomes.push(
      await measure("call with ^(a+)+$ against 48 a's and a !", async () => {
        const answer = (await call("hostile", "match", { text: `${"a".repeat(48)}!` })) as { ok: boolean; result?: { isError?: boolean } };
        return { ok: answer.ok, refused: answer.result?.isError === true };
      }),
    );
    for (const socket of sockets) socket.destroy();
    return outcomes;
  } finally {
    child.kill("SIGTERM");
    if (child.exitCode === null) await once(child, "exit");
  }
}

const { dir, cleanup } = await tempDir("abridge-load-");
try {
  const config = await writeConfig(dir, `cache_dir = "cache"\n${fixtureServerToml("echo", "echoServer.ts")}`);
  const outcomes: Outcome[] = [];
  if (ONLY === "" || ONLY === "http") outcomes.push(await benchHttp(config));
  if (ONLY === "" || ONLY === "daemon") outcomes.push(await benchDaemon(config, path.join(dir, "state")));
  for (const outcome of outcomes) process.stdout.write(`${JSON.stringify(outcome)}\n`);
  let hostileLost = 0;
  if (ONLY === "" || ONLY === "hostile") {
    const hostileConfig = await writeConfig(
      dir,
      `cache_dir = "cache"\nmode = "compact"\n${fixtureServerToml("echo", "echoServer.ts")}\n${fixtureServerToml("hostile", "hostileServer.ts")}`,
    );
    const hostile = await benchHostile(hostileConfig, path.join(dir, "hostile-state"));
    for (const outcome of hostile) process.stdout.write(`${JSON.stringify(outcome)}\n`);
    hostileLost = hostile.reduce((sum, o) => sum + o.healthyLost, 0);
    writeFileSync(new URL("./results/hostile.json", import.meta.url), `${JSON.stringify({ date: new Date().toISOString(), cases: hostile }, null, 2)}\n`);
  }
  process.exitCode = outcomes.some((o) => o.lost > 0 || o.mismatched > 0) || hostileLost > 0 ? 1 : 0;
} finally {
  await cleanup();
}
