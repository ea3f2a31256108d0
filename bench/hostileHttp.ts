/**
 * Hostile load on `abridge serve --http` (a benchmark, not a test): serve with a token and the
 * open-file limit of a common desktop (`ulimit -n 1024`, soft and hard), an echo upstream and the
 * hostile fixture; one case at a time, an attacker in a process of its own attacks serve while a
 * healthy client (the token holder, on a session of its own) calls echo one call after another.
 *
 *   npx tsx bench/hostileHttp.ts [--full] [--log-lines N] [--idle-sockets N] [--hold-seconds S]
 *                                [--fd-limit N] [--bin path/to/src/cli/bin.ts]
 *
 * Cases:
 * - log flood: a session opens its GET stream and never reads it; the hostile upstream logs N lines
 *   (default 200,000; 1,000,000 with --full) outside any call, which go to every GET stream. The
 *   case lasts until a second session, reading its own GET stream, has seen the last line; then
 *   the blocked client leaves.
 * - idle sockets: N tokenless sockets (default 1,100, past the 1,024 limit) opened and held
 *   without a byte for S seconds (default 12; 30 with --full), then closed.
 * Per case: serve's RSS before, at its highest during the case (sampled every 100 ms) and 3 s after
 * the attacker left; the healthy calls' p50/p99 and the calls lost (failed or never answered),
 * every tenth of them on a new connection (the others on a keep-alive one); what the attacker saw.
 * `--bin` runs another checkout's CLI (an older abridge, for comparison). Writes
 * bench/results/hostile-http.json.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import http from "node:http";
import { connect, type Socket } from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { CLI_BIN, ECHO_FIXTURE, stdioServerToml, tsxCommand } from "./benchConfig.js";
import { REPO_ROOT } from "./corpus.js";
import { markdownTable } from "./markdownTable.js";
import { nowMs, percentile, round, processMemoryKiB, positiveFlag } from "./measure.js";
import { isMainModule, runStandalone } from "./standalone.js";

const HERE = fileURLToPath(import.meta.url);
const HOSTILE_FIXTURE = path.join(REPO_ROOT, "test", "fixtures", "hostileServer.ts");
const TOKEN = "bench-token-of-the-healthy-client";
const ACCEPT = "application/json, text/event-stream";
const PROTOCOL_VERSION = "2025-06-18";

/** One case's figures. */
export interface HostileHttpCase {
  case: string;
  rssBeforeMiB: number;
  /** The highest RSS sampled during the case. */
  rssPeakMiB: number;
  /** 3 s after the attacker left. */
  rssAfterMiB: number;
  healthyCalls: number;
  /** Healthy calls that failed or were never answered. */
  healthyLost: number;
  healthyP50Ms: number;
  healthyP99Ms: number;
  seconds: number;
  /** What the attacker saw (lines delivered, sockets closed by serve...). */
  attacker: Record<string, unknown>;
  /** Warnings serve logged during the case, by message. */
  warnings: Record<string, number>;
}

/** Options of {@link runHostileHttp}. */
export interface HostileHttpOptions {
  full?: boolean;
  logLines?: number;
  idleSockets?: number;
  holdSeconds?: number;
  fdLimit?: number;
  /** The CLI to run (another checkout's, for comparison). */
  bin?: string;
}

/** What {@link runHostileHttp} measured. */
export interface HostileHttpResult {
  method: string;
  bin: string;
  cases: HostileHttpCase[];
}

function memoryMiB(pid: number, field: "VmRSS" | "VmHWM"): number {
  return round(processMemoryKiB(pid, field) / 1024, 0);
}

interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

function post(url: string, headers: Record<string, string>, body: unknown, agent: http.Agent | false = false, timeoutMs = 30_000): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      { method: "POST", agent, headers: { "content-type": "application/json", accept: ACCEPT, ...headers }, signal: AbortSignal.timeout(timeoutMs) },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => (text += chunk));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(JSON.stringify(body));
  });
}

/** A session of its own on `url`; the headers of its requests. */
async function session(url: string, name: string): Promise<Record<string, string>> {
  const auth = { authorization: `Bearer ${TOKEN}` };
  const init = await post(url, auth, {
    jsonrpc: "2.0",
    id: 0,
    method: "initialize",
    params: { protocolVersion: PROTOCOL_VERSION, capabilities: {}, clientInfo: { name, version: "1" } },
  });
  if (init.status !== 200) throw new Error(`initialize: HTTP ${init.status}: ${init.body.slice(0, 200)}`);
  const headers = { ...auth, "mcp-session-id": String(init.headers["mcp-session-id"]), "mcp-protocol-version": PROTOCOL_VERSION };
  await post(url, headers, { jsonrpc: "2.0", method: "notifications/initialized" });
  return headers;
}

/** A GET stream on a socket of its own: `onData` sees what arrives; `pause` stops reading. */
async function getStream(url: string, headers: Record<string, string>, onData?: (chunk: Buffer) => void): Promise<Socket> {
  const { hostname, port, pathname } = new URL(url);
  const socket = connect({ host: hostname, port: Number(port) });
  socket.on("error", () => undefined);
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", () => resolve());
    socket.once("error", reject);
  });
  const lines = [
    `GET ${pathname} HTTP/1.1`,
    `Host: ${hostname}:${port}`,
    "Accept: text/event-stream",
    ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
  ];
  socket.write(`${lines.join("\r\n")}\r\n\r\n`);
  await new Promise<void>((resolve) =>
    socket.once("data", (first: Buffer) => {
      onData?.(first);
      resolve();
    }),
  );
  if (onData) socket.on("data", onData);
  return socket;
}

/** The attacker of the log-flood case (this file with `--attack log-flood`). */
async function logFloodAttacker(url: string, lines: number): Promise<void> {
  const blocked = await session(url, "blocked");
  const socket = await getStream(url, blocked);
  // Never read again: what serve writes piles up in the kernel's buffers, then in serve's. (A
  // paused socket does not see serve end it either: the warnings of the case say so.)
  socket.pause();
  const observer = await session(url, "observer");
  let seen = 0;
  let tail = "";
  let lastData = nowMs();
  const last = `"${lines - 1} `;
  let resolveDone: () => void = () => undefined;
  const done = new Promise<void>((resolve) => (resolveDone = resolve));
  const watcher = await getStream(url, observer, (chunk) => {
    const text = tail + chunk.toString("latin1");
    seen += text.split("event: message").length - tail.split("event: message").length;
    lastData = nowMs();
    if (text.includes(last)) resolveDone();
    tail = text.slice(-64);
  });
  // The observer reads, but may read slower than the flood comes: serve then drops some of its
  // lines too, the last one perhaps. Quiet for 3 s after the flood began: it has passed.
  const quiet = setInterval(() => {
    if (seen > 0 && nowMs() - lastData > 3_000) resolveDone();
  }, 250);
  process.stdout.write("ready\n");
  const started = nowMs();
  const answer = await post(url, blocked, {
    jsonrpc: "2.0",
    id: 1,
    method: "tools/call",
    params: { name: "hostile_log_flood", arguments: { count: lines, bytes: 100 } },
  });
  if (!answer.body.includes("flooding")) throw new Error(`log_flood: ${answer.body.slice(0, 200)}`);
  await done;
  clearInterval(quiet);
  const seconds = round((nowMs() - started) / 1000, 1);
  socket.destroy();
  watcher.destroy();
  process.stdout.write(JSON.stringify({ lines, observerSaw: seen, floodSeconds: seconds }));
}

/** The attacker of the idle-socket case (this file with `--attack idle`). */
async function idleAttacker(url: string, count: number, holdMs: number): Promise<void> {
  const { hostname, port } = new URL(url);
  const sockets: Socket[] = [];
  let closedByServe = 0;
  let refused = 0;
  let mine = false;
  for (let i = 0; i < count; i++) {
    const socket = connect({ host: hostname, port: Number(port) });
    socket.on("error", () => undefined);
    socket.once("close", () => {
      if (!mine) closedByServe += 1;
    });
    sockets.push(socket);
    await new Promise<void>((resolve) => {
      socket.once("connect", () => resolve());
      socket.once("error", () => {
        refused += 1;
        resolve();
      });
    });
  }
  process.stdout.write("ready\n");
  await new Promise((resolve) => setTimeout(resolve, holdMs));
  const open = sockets.filter((s) => !s.destroyed && s.readyState === "open").length;
  mine = true;
  for (const socket of sockets) socket.destroy();
  process.stdout.write(JSON.stringify({ opened: count, refused, closedByServe, stillOpenAtEnd: open, heldSeconds: holdMs / 1000 }));
}

/** Runs an attacker process; `ready` once it is in place, `done` with what it saw. */
function attack(args: string[]): { ready: Promise<void>; done: Promise<Record<string, unknown>> } {
  const { command, args: argv } = tsxCommand(HERE, ["--attack", ...args]);
  const child = spawn(command, argv, { stdio: ["ignore", "pipe", "inherit"] });
  let out = "";
  let onReady: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => (onReady = resolve));
  child.stdout!.on("data", (b: Buffer) => {
    out += b.toString("utf8");
    if (out.startsWith("ready\n")) onReady();
  });
  const done = new Promise<Record<string, unknown>>((resolve, reject) => {
    child.once("exit", (code) =>
      code === 0 ? resolve(JSON.parse(out.slice("ready\n".length)) as Record<string, unknown>) : reject(new Error(`attacker exited with ${code}: ${out}`)),
    );
  });
  done.catch(() => onReady());
  return { ready, done };
}

/** Healthy echo calls one after another (5 ms apart) until `until` settles. */
async function healthy(url: string, headers: Record<string, string>, until: Promise<unknown>): Promise<{ latencies: number[]; lost: number }> {
  let done = false;
  void until.finally(() => (done = true)).catch(() => undefined);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const latencies: number[] = [];
  let lost = 0;
  let id = 1;
  try {
    while (!done) {
      const t0 = nowMs();
      try {
        // Every tenth call on a new connection: the token holder connecting during the attack.
        const reply = await post(
          url,
          headers,
          { jsonrpc: "2.0", id, method: "tools/call", params: { name: "echo_echo", arguments: { text: `healthy ${id}` } } },
          id % 10 === 0 ? false : agent,
        );
        if (reply.status === 200 && reply.body.includes(`healthy ${id}`)) latencies.push(nowMs() - t0);
        else lost += 1;
      } catch {
        lost += 1;
      }
      id += 1;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  } finally {
    agent.destroy();
  }
  return { latencies, lost };
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGTERM");
  await exited;
}

/** Runs the attacks on one `serve --http`. */
export async function runHostileHttp(options: HostileHttpOptions = {}): Promise<HostileHttpResult> {
  const full = options.full === true;
  const logLines = options.logLines ?? (full ? 1_000_000 : 200_000);
  const idleSockets = options.idleSockets ?? 1_100;
  const holdSeconds = options.holdSeconds ?? (full ? 30 : 12);
  const fdLimit = options.fdLimit ?? 1_024;
  const bin = path.resolve(options.bin ?? CLI_BIN);
  const method =
    `abridge serve --http with a token, ulimit -n ${fdLimit} (soft and hard), full mode, an echo upstream and the hostile fixture; an attacker process per case; ` +
    `the token holder calls echo one call at a time (5 ms apart) on its own session, every tenth call on a new connection`;
  const dir = await mkdtemp(path.join(os.tmpdir(), "abridge-bench-hostile-http-"));
  const cases: HostileHttpCase[] = [];
  let serve: ChildProcess | undefined;
  try {
    const config = path.join(dir, "abridge.toml");
    await writeFile(
      config,
      [
        'mode = "full"',
        'log_level = "warn"',
        'cache_dir = "cache"',
        "startup_grace_ms = 120000",
        "",
        stdioServerToml("echo", ECHO_FIXTURE, ["--tools", "0"]),
        stdioServerToml("hostile", HOSTILE_FIXTURE),
      ].join("\n"),
    );
    const { command, args } = tsxCommand(bin, ["serve", "--config", config, "--no-watch", "--http", "127.0.0.1:0"]);
    const child = spawn("sh", ["-c", `ulimit -n ${fdLimit} && exec "$0" "$@"`, command, ...args], {
      stdio: ["ignore", "ignore", "pipe"],
      env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", ABRIDGE_TOKEN: TOKEN },
    });
    serve = child;
    let stderr = "";
    const url = await new Promise<string>((resolve, reject) => {
      child.stderr!.on("data", (b: Buffer) => {
        stderr += b.toString("utf8");
        const match = /at (http:\/\/127\.0\.0\.1:\d+\/mcp)/.exec(stderr);
        if (match) resolve(match[1]!);
      });
      child.once("exit", (code) => reject(new Error(`abridge serve exited with ${code}: ${stderr}`)));
    });
    const pid = child.pid!;
    const headers = await session(url, "healthy");
    // Warm-up: both upstreams up, the code paths loaded.
    for (let i = 0; i < 20; i++)
      await post(url, headers, { jsonrpc: "2.0", id: 100_000 + i, method: "tools/call", params: { name: "echo_echo", arguments: { text: "warm" } } });
    const warnings = (from: number): Record<string, number> => {
      const counts: Record<string, number> = {};
      for (const line of stderr.slice(from).split("\n")) {
        const message = /^abridge (?:warn|error) (.*?)(?: \w+=|$)/.exec(line)?.[1];
        if (message !== undefined) counts[message] = (counts[message] ?? 0) + 1;
      }
      return counts;
    };

    const measure = async (name: string, attacker: { ready: Promise<void>; done: Promise<Record<string, unknown>> }): Promise<void> => {
      process.stderr.write(`bench: hostileHttp: ${name}...\n`);
      const logFrom = stderr.length;
      const rssBefore = memoryMiB(pid, "VmRSS");
      let peak = rssBefore;
      const sampler = setInterval(() => (peak = Math.max(peak, memoryMiB(pid, "VmRSS"))), 100);
      try {
        await attacker.ready;
        const t0 = nowMs();
        const probe = await healthy(url, headers, attacker.done);
        const seconds = round((nowMs() - t0) / 1000, 1);
        const figures = await attacker.done;
        await new Promise((resolve) => setTimeout(resolve, 3_000));
        cases.push({
          case: name,
          rssBeforeMiB: rssBefore,
          rssPeakMiB: peak,
          rssAfterMiB: memoryMiB(pid, "VmRSS"),
          healthyCalls: probe.latencies.length,
          healthyLost: probe.lost,
          healthyP50Ms: round(percentile(probe.latencies, 50)),
          healthyP99Ms: round(percentile(probe.latencies, 99)),
          seconds,
          attacker: figures,
          warnings: warnings(logFrom),
        });
      } finally {
        clearInterval(sampler);
      }
    };
    await measure("baseline (no attack)", { ready: Promise.resolve(), done: new Promise((resolve) => setTimeout(() => resolve({}), 3_000)) });
    await measure(`${logLines.toLocaleString("en-US")} log lines, one GET stream never read`, attack(["log-flood", url, String(logLines)]));
    await measure(
      `${idleSockets.toLocaleString("en-US")} idle tokenless sockets held ${holdSeconds} s`,
      attack(["idle", url, String(idleSockets), String(holdSeconds * 1000)]),
    );
  } finally {
    if (serve !== undefined) await stop(serve);
    await rm(dir, { recursive: true, force: true });
  }
  return { method, bin: path.relative(REPO_ROOT, bin) || bin, cases };
}

/** The markdown section of a {@link runHostileHttp} result. */
export function hostileHttpMarkdown(result: HostileHttpResult): string {
  const attacker = (c: HostileHttpCase): string =>
    Object.entries(c.attacker)
      .map(([k, v]) => `${k} ${String(v)}`)
      .join(", ");
  return [
    "### serve --http under attack",
    "",
    `${result.method}. CLI: ${result.bin}.`,
    "",
    markdownTable(
      [
        "case",
        "RSS before MiB>",
        "RSS peak MiB>",
        "RSS after MiB>",
        "healthy calls>",
        "lost>",
        "healthy p50 ms>",
        "healthy p99 ms>",
        "seconds>",
        "attacker saw",
        "serve warned",
      ],
      result.cases.map((c) => [
        c.case,
        c.rssBeforeMiB,
        c.rssPeakMiB,
        c.rssAfterMiB,
        c.healthyCalls,
        c.healthyLost,
        c.healthyP50Ms,
        c.healthyP99Ms,
        c.seconds,
        attacker(c),
        Object.entries(c.warnings)
          .map(([message, count]) => `${message} (${count})`)
          .join("; "),
      ]),
    ),
    "",
    `Measured on ${os.cpus().length} core(s); serve, its upstreams, the attacker and the healthy client share them.`,
  ].join("\n");
}

if (isMainModule(import.meta.url)) {
  const argv = process.argv.slice(2);
  if (argv[0] === "--attack") {
    const [, kind, url, a, b] = argv as [string, string, string, string, string | undefined];
    if (kind === "log-flood") await logFloodAttacker(url, Number(a));
    else await idleAttacker(url, Number(a), Number(b));
  } else {
    const options: HostileHttpOptions = { full: argv.includes("--full") };
    const logLines = positiveFlag(argv, "log-lines");
    const idleSockets = positiveFlag(argv, "idle-sockets");
    const holdSeconds = positiveFlag(argv, "hold-seconds");
    const fdLimit = positiveFlag(argv, "fd-limit");
    if (logLines !== undefined) options.logLines = logLines;
    if (idleSockets !== undefined) options.idleSockets = idleSockets;
    if (holdSeconds !== undefined) options.holdSeconds = holdSeconds;
    if (fdLimit !== undefined) options.fdLimit = fdLimit;
    const binAt = argv.indexOf("--bin");
    if (binAt !== -1 && argv[binAt + 1] !== undefined) options.bin = argv[binAt + 1]!;
    // Another build's figures go beside this one's, not over them.
    const name = options.bin === undefined ? "hostile-http" : "hostile-http-other";
    await runStandalone(import.meta.url, { name, run: () => runHostileHttp(options), markdown: hostileHttpMarkdown });
  }
}
