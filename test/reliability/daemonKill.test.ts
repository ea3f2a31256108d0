/**
 * `kill -9` of the daemon while it writes summaries: afterwards every complete cache line is valid
 * (at most a torn last line), the lockfile names a dead pid and is taken over by the next daemon,
 * which serves the entries already stored, and no upstream child outlives its daemon.
 */
import { spawn } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import { once } from "node:events";
import { readFile, stat } from "node:fs/promises";
import { connect } from "node:net";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { parseCacheLine } from "../../src/cache/parseCacheLine.js";
import { lockFilePath, readLock } from "../../src/daemon/wire/lockfile.js";
import { parseAddress } from "../../src/daemon/wire/protocol.js";
import { fixtureServerToml, pidsWithMarker, writeConfig } from "../helpers/cliHarness.js";
import { isAlive, killAll } from "../helpers/processes.js";
import { BIN } from "../helpers/serveHarness.js";
import { Watch, waitFor } from "../helpers/waitFor.js";
import { useTempDir } from "../helpers/tempDir.js";

const children: ChildProcess[] = [];
const temp = useTempDir({ prefix: "abridge-kill-" });
const markers: string[] = [];
afterEach(async () => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  const left = markers.splice(0).flatMap(pidsWithMarker);
  killAll(left);
  expect(left, "processes left behind").toEqual([]);
});

/** Runs `abridge daemon` in the foreground; resolves once it says it listens. */
async function runDaemon(config: string, stateDir: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, ["--import", "tsx", BIN, "daemon", "--config", config, "--state-dir", stateDir, "--heartbeat-ms", "200"], {
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "" },
    stdio: ["ignore", "ignore", "pipe"],
  });
  children.push(child);
  let stderr = "";
  const output = new Watch();
  child.stderr!.on("data", (b: Buffer) => {
    stderr += b.toString("utf8");
    output.changed();
  });
  child.once("exit", () => output.changed());
  await output.until(() => stderr.includes("listening on") || child.exitCode !== null, { what: "the daemon to listen" });
  if (!stderr.includes("listening on")) throw new Error(`daemon did not start:\n${stderr}`);
  return child;
}

/** One request over the line protocol. */
async function request(address: string, body: Record<string, unknown>): Promise<Record<string, unknown>> {
  const parsed = parseAddress(address);
  if (!parsed) throw new Error(`unexpected address ${address}`);
  const socket = parsed.kind === "unix" ? connect({ path: parsed.path }) : connect({ host: parsed.host, port: parsed.port });
  await once(socket, "connect");
  socket.write(`${JSON.stringify(body)}\n`);
  let text = "";
  for await (const chunk of socket) {
    text += (chunk as Buffer).toString("utf8");
    if (text.includes("\n")) break;
  }
  socket.destroy();
  return JSON.parse(text.slice(0, text.indexOf("\n"))) as Record<string, unknown>;
}

async function cacheLines(file: string): Promise<string[]> {
  return (await readFile(file, "utf8").catch(() => "")).split("\n");
}

describe("daemon kill -9 during writes", () => {
  it("leaves a consistent cache and a stale lockfile the next daemon takes over", async () => {
    const marker = `--kill-marker-${process.pid}-${Date.now()}`;
    markers.push(marker);
    const cacheFile = path.join(temp.path, "cache", "summaries.jsonl");
    const stateDir = path.join(temp.path, "state");
    const config = await writeConfig(
      temp.path,
      `cache_dir = "cache"\n${fixtureServerToml("echo", "echoServer.ts", ["--tools", "400", "--page-size", "100", marker])}`,
    );

    const first = await runDaemon(config, stateDir);
    // Kill as soon as summaries are landing, while the rest are still being written.
    // The cache file grows where only reading it tells: polled.
    await waitFor(async () => (await cacheLines(cacheFile)).length > 2, { what: "the first summaries" });
    first.kill("SIGKILL");
    await once(first, "exit");
    const afterKill = await cacheLines(cacheFile);
    const complete = afterKill.slice(0, -1);
    const tail = afterKill.at(-1)!;
    for (const line of complete) expect(parseCacheLine(line).ok, line.slice(0, 80)).toBe(true);
    // A torn tail is allowed (and must be skipped), anything else is not.
    if (tail !== "") expect(parseCacheLine(tail).ok).toBe(false);
    const lockFile = lockFilePath(stateDir);
    const stale = await readLock(lockFile);
    expect(stale).toMatchObject({ state: "ok", lock: { pid: first.pid } });
    expect(isAlive(first.pid!)).toBe(false);
    // The upstream's stdin closed with its parent: it exits rather than lingering as an orphan.
    await waitFor(() => pidsWithMarker(marker).length === 0, { what: "the orphaned upstream to exit", timeoutMs: 20_000 });

    const second = await runDaemon(config, stateDir);
    const lock = await readLock(lockFile);
    if (lock.state !== "ok") throw new Error(`lockfile unreadable after restart: ${JSON.stringify(lock)}`);
    expect(lock.lock.pid).toBe(second.pid);
    expect((await stat(lockFile)).mode & 0o777).toBe(0o600);
    const answer = (await request(lock.lock.address, { op: "stats", token: lock.lock.token })) as {
      ok: boolean;
      stats: { cache: { entries: number; invalidLines: number } };
    };
    expect(answer.ok).toBe(true);
    expect(answer.stats.cache.entries).toBeGreaterThanOrEqual(complete.length);
    expect(answer.stats.cache.invalidLines).toBeLessThanOrEqual(1);
    // The restarted daemon finishes the job: every tool ends up with one valid line.
    await waitFor(async () => (await cacheLines(cacheFile)).filter((l) => parseCacheLine(l).ok).length >= 402, { what: "all 402 summaries" });
    second.kill("SIGTERM");
    await once(second, "exit");
    expect((await readLock(lockFile)).state).toBe("missing");
  });
});
