/**
 * What a client waits for when an upstream is slow or hung (`abridge serve` over stdio, real
 * processes):
 * - time from spawn to the `initialize` answer with no upstream, and with one upstream that never
 *   answers `initialize` (the difference is what abridge makes the client wait for upstreams);
 * - time from the end of stdin (and from SIGTERM) to the exit of abridge while two upstreams are
 *   still in `initialize`, one of them ignoring SIGTERM, and whether any child is left.
 *
 *   npm run bench -- --only slowStart
 */
import { spawn } from "node:child_process";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { CLI_BIN, stdioServerToml, tsxCommand } from "./benchConfig.js";
import { REPO_ROOT } from "./corpus.js";
import { median, round } from "./measure.js";
import { delay } from "../src/model/timers.js";

const HANG_FIXTURE = path.join(REPO_ROOT, "test", "fixtures", "hangServer.ts");
const RUNS = 5;

/** Result of {@link runSlowStart}. */
export interface SlowStartResult {
  runs: number;
  /** Spawn to the `initialize` answer, no upstream (median ms): the process's own start-up. */
  initializeNoUpstreamMs: number;
  /** Spawn to the `initialize` answer with one upstream that never answers (median ms). */
  initializeHungUpstreamMs: number;
  /**
   * `initialize` sent once abridge is up (its hung upstream is running) to its answer (median ms):
   * what a client waits once the process exists, without the process's own start-up.
   */
  initializeAfterUpHungMs: number;
  /** End of stdin to exit, two upstreams still in initialize, one ignoring SIGTERM (median ms). */
  stdinEndToExitMs: number;
  /** SIGTERM to exit, same upstreams (median ms). */
  sigtermToExitMs: number;
  /** Children of abridge still alive after it exited, over every run (should be 0). */
  childrenLeft: number;
}

async function pidsWithMarker(marker: string): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const cmdline = await readFile(`/proc/${entry}/cmdline`, "utf8").catch(() => "");
    if (cmdline.includes(marker)) pids.push(Number(entry));
  }
  return pids;
}

/**
 * Spawns `abridge serve` on `config`, sends `initialize` and times its answer: from the spawn, or
 * with `whenUp`, from the moment `whenUp` resolves (abridge is up) to the answer.
 */
async function timeInitialize(
  config: string,
  dir: string,
  whenUp?: () => Promise<void>,
): Promise<{ ms: number; end: (how: "stdin" | "SIGTERM") => Promise<number> }> {
  const { command, args } = tsxCommand(CLI_BIN, ["serve", "--config", config, "--cache-dir", path.join(dir, "cache"), "--no-watch"]);
  let started = performance.now();
  const child = spawn(command, args, { cwd: REPO_ROOT, stdio: ["pipe", "pipe", "ignore"] });
  const exited = new Promise<number>((resolve) => child.once("exit", () => resolve(performance.now())));
  if (whenUp !== undefined) {
    await whenUp();
    started = performance.now();
  }
  child.stdin.write(
    `${JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "bench", version: "1" } } })}\n`,
  );
  const ms = await new Promise<number>((resolve, reject) => {
    let text = "";
    child.stdout.on("data", (b: Buffer) => {
      text += b.toString("utf8");
      if (text.includes('"id":1')) resolve(performance.now() - started);
    });
    child.once("exit", () => reject(new Error("abridge exited before answering initialize")));
  });
  return {
    ms,
    end: async (how) => {
      const sent = performance.now();
      if (how === "stdin") child.stdin.end();
      else child.kill("SIGTERM");
      return (await exited) - sent;
    },
  };
}

/** Runs every measurement {@link RUNS} times. */
export async function runSlowStart(): Promise<SlowStartResult> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "abridge-bench-slow-"));
  try {
    // In the upstreams' command lines only: abridge's own names the config file, inside `dir`.
    const marker = `${path.basename(dir)}-upstream`;
    const none = path.join(dir, "none.toml");
    await writeFile(none, "");
    const hung = path.join(dir, "hung.toml");
    const hangServer = (name: string, extra: string[]): string => stdioServerToml(name, HANG_FIXTURE, ["--marker", marker, ...extra]);
    await writeFile(hung, hangServer("hang", []));
    const two = path.join(dir, "two.toml");
    await writeFile(two, hangServer("stubborn", ["--ignore-sigterm"]) + hangServer("silent", []));

    const noUpstream: number[] = [];
    const hungUpstream: number[] = [];
    const afterUp: number[] = [];
    const stdinEnd: number[] = [];
    const sigterm: number[] = [];
    let childrenLeft = 0;
    for (let run = 0; run < RUNS; run++) {
      const bare = await timeInitialize(none, dir);
      noUpstream.push(bare.ms);
      await bare.end("stdin");
      const slow = await timeInitialize(hung, dir);
      hungUpstream.push(slow.ms);
      await slow.end("stdin");
      // Once the hung upstream runs, abridge is up and that upstream is in `initialize` for good.
      const up = await timeInitialize(hung, dir, async () => {
        while ((await pidsWithMarker(marker)).length < 1) await delay(20);
      });
      afterUp.push(up.ms);
      await up.end("stdin");
      for (const how of ["stdin", "SIGTERM"] as const) {
        const target = await timeInitialize(two, dir);
        // Both upstreams are running (and will never answer) before abridge is told to stop.
        while ((await pidsWithMarker(marker)).length < 2) await delay(20);
        (how === "stdin" ? stdinEnd : sigterm).push(await target.end(how));
        const left = await pidsWithMarker(marker);
        childrenLeft += left.length;
        for (const pid of left) process.kill(pid, "SIGKILL");
      }
    }
    return {
      runs: RUNS,
      initializeNoUpstreamMs: round(median(noUpstream)),
      initializeHungUpstreamMs: round(median(hungUpstream)),
      initializeAfterUpHungMs: round(median(afterUp)),
      stdinEndToExitMs: round(median(stdinEnd)),
      sigtermToExitMs: round(median(sigterm)),
      childrenLeft,
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Markdown of a {@link SlowStartResult}. */
export function slowStartMarkdown(r: SlowStartResult): string {
  return [
    `### Slow and hung upstreams (serve over stdio, median of ${r.runs})`,
    "",
    "| what | ms |",
    "|---|--:|",
    `| spawn to \`initialize\` answered, no upstream | ${r.initializeNoUpstreamMs} |`,
    `| spawn to \`initialize\` answered, one upstream that never answers | ${r.initializeHungUpstreamMs} |`,
    `| \`initialize\` sent once abridge is up to its answer, the same hung upstream | ${r.initializeAfterUpHungMs} |`,
    `| end of stdin to exit, two upstreams in \`initialize\` (one ignores SIGTERM) | ${r.stdinEndToExitMs} |`,
    `| SIGTERM to exit, the same upstreams | ${r.sigtermToExitMs} |`,
    "",
    `Children left after exit, over every run: ${r.childrenLeft}.`,
  ].join("\n");
}
