/**
 * HTTP session bench (a bench script, not a test): rounds of N `initialize` without DELETE
 * against `abridge serve --http` (echo fixture with 3,000 tools, so the tool list is large), the
 * way a client that never ends its sessions behaves. Between rounds the idle sessions expire
 * (`http_session_idle_minutes`, short here). RSS of the abridge process is sampled after start,
 * after each round and after each expiry; a call on a fresh session checks it still answers.
 *
 *   npx tsx bench/sessions.ts [--sessions 5000] [--rounds 3] [--idle-seconds 3] [--max-sessions 1000]
 *                             [--bin path/to/src/cli/bin.ts --baseline]
 *
 * `--bin` runs another checkout's CLI (an older abridge, for comparison); `--baseline` leaves the
 * session settings out of the config, for a version that does not know them.
 * Prints a table of RSS per round and writes bench/results/sessions.json and .md (with
 * `--baseline`, sessions-baseline.json and .md).
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { readFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { REPO_ROOT } from "./corpus.js";
import { markdownTable } from "./markdownTable.js";
import { runStandalone } from "./standalone.js";
import { flagArg, numberArg, stringArg } from "../test/fixtures/fixtureArgs.js";
import { fixtureServerToml, tempDir } from "../test/helpers/cliHarness.js";
import { BIN } from "../test/helpers/serveHarness.js";

const SESSIONS = numberArg("sessions", 5_000);
const ROUNDS = numberArg("rounds", 3);
const IDLE_SECONDS = numberArg("idle-seconds", 3);
const MAX_SESSIONS = numberArg("max-sessions", 1_000);
const CONCURRENCY = 16;
const CLI = path.resolve(stringArg("bin", BIN));
const BASELINE = flagArg("baseline");

function rssMiB(pid: number): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return match ? Math.round(Number(match[1]) / 1024) : Number.NaN;
}

const INITIALIZE = JSON.stringify({
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "bench", version: "1" } },
});

/** N initialize at CONCURRENCY; counts by status. */
async function openSessions(url: string, count: number): Promise<Record<string, number>> {
  const statuses: Record<string, number> = {};
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < count) {
      next += 1;
      try {
        const res = await fetch(url, {
          method: "POST",
          headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
          body: INITIALIZE,
        });
        await res.text();
        statuses[res.status] = (statuses[res.status] ?? 0) + 1;
      } catch {
        statuses.failed = (statuses.failed ?? 0) + 1;
      }
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  return statuses;
}

async function healthyCall(url: string): Promise<boolean> {
  const client = new Client({ name: "bench", version: "1" });
  try {
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    const result = await client.callTool({ name: "echo_echo", arguments: { text: "alive" } });
    return (result.content as { text: string }[])[0]?.text === "alive";
  } catch {
    return false;
  } finally {
    await client.close().catch(() => undefined);
  }
}

/** One round: the status counts of its initializes, RSS after it and after its sessions expired, and a fresh call's health. */
interface Round {
  statuses: Record<string, number>;
  rssAfterMiB: number;
  rssAfterExpiryMiB: number;
  healthy: boolean;
}

interface SessionsResult {
  cli: string;
  baseline: boolean;
  sessionsPerRound: number;
  idleSeconds: number;
  maxSessions: number;
  tools: number;
  rssStartMiB: number;
  rounds: Round[];
}

/** Starts `abridge serve --http`, runs the rounds of abandoned sessions, and stops it. */
async function runSessions(): Promise<SessionsResult> {
  const { dir, cleanup } = await tempDir("abridge-bench-sessions-");
  const config = path.join(dir, "abridge.toml");
  await writeFile(
    config,
    (BASELINE ? "" : `http_session_idle_minutes = ${IDLE_SECONDS / 60}\nhttp_max_sessions = ${MAX_SESSIONS}\n`) +
      'cache_dir = "cache"\n' +
      fixtureServerToml("echo", "echoServer.ts", ["--tools", "3000", "--page-size", "1000"]),
  );
  const child = spawn(process.execPath, ["--import", "tsx", CLI, "serve", "--config", config, "--http", "127.0.0.1:0", "--log-level", "error"], {
    stdio: ["ignore", "ignore", "pipe"],
    cwd: REPO_ROOT,
  });
  try {
    let stderr = "";
    const url = await new Promise<string>((resolve, reject) => {
      child.stderr!.on("data", (b: Buffer) => {
        stderr += b.toString("utf8");
        const match = /at (http:\/\/127\.0\.0\.1:\d+\/mcp)/.exec(stderr);
        if (match) resolve(match[1]!);
      });
      child.once("exit", (code) => reject(new Error(`serve exited with ${code}:\n${stderr}`)));
    });
    const pid = child.pid!;
    const rounds: Round[] = [];
    const rssStartMiB = rssMiB(pid);
    for (let round = 0; round < ROUNDS; round++) {
      const statuses = await openSessions(url, SESSIONS);
      if (child.exitCode !== null) throw new Error(`serve exited with ${child.exitCode} during round ${round + 1}:\n${stderr.slice(-2000)}`);
      const rssAfterMiB = rssMiB(pid);
      // Idle time plus a sweep interval, so every session of the round has expired.
      await new Promise((resolve) => setTimeout(resolve, IDLE_SECONDS * 1_000 * 1.5 + 1_000));
      rounds.push({ statuses, rssAfterMiB, rssAfterExpiryMiB: rssMiB(pid), healthy: await healthyCall(url) });
    }
    return {
      cli: path.relative(REPO_ROOT, CLI),
      baseline: BASELINE,
      sessionsPerRound: SESSIONS,
      idleSeconds: IDLE_SECONDS,
      maxSessions: MAX_SESSIONS,
      tools: 3000,
      rssStartMiB,
      rounds,
    };
  } finally {
    child.kill("SIGTERM");
    if (child.exitCode === null) await once(child, "exit");
    await cleanup();
  }
}

function sessionsMarkdown(r: SessionsResult): string {
  return [
    `${r.sessionsPerRound.toLocaleString("en-US")} initializes without DELETE per round against ${r.cli}${r.baseline ? " (no session settings)" : `, sessions idle ${r.idleSeconds} s expire, at most ${r.maxSessions.toLocaleString("en-US")}`}; ${r.tools.toLocaleString("en-US")} tools. RSS at start: ${r.rssStartMiB} MiB.\n`,
    markdownTable(
      ["round", "statuses", "RSS after MiB>", "RSS after expiry MiB>", "fresh call"],
      r.rounds.map((x, i) => [
        i + 1,
        Object.entries(x.statuses)
          .map(([k, n]) => `${k}: ${n}`)
          .join(", "),
        x.rssAfterMiB,
        x.rssAfterExpiryMiB,
        x.healthy ? "answers" : "fails",
      ]),
    ),
  ].join("\n");
}

await runStandalone(import.meta.url, {
  name: BASELINE ? "sessions-baseline" : "sessions",
  run: runSessions,
  markdown: sessionsMarkdown,
  json: (r) => r,
});
