/**
 * The daemon read before it authenticated: a line could grow to 16 MiB before its token was
 * looked at (100 connections sending 15 MiB without a newline took the daemon from 145 MB to
 * 1.6 GB), and idle connections were kept for good (1,100 of them under `ulimit -n 1024` locked
 * the token holder out). Now the token must come in a connection's first 64 KiB, within a
 * deadline, and connections without it are capped, the oldest making room for new ones.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { DaemonClient } from "../../src/daemon/client/daemonClient.js";
import { lockFilePath, readLock } from "../../src/daemon/wire/lockfile.js";
import { fixtureServerToml, pidsWithMarker, tempDir, writeConfig } from "../helpers/cliHarness.js";
import { mib, peakRssBytes, rssBytes } from "../helpers/procMemory.js";
import { killAll } from "../helpers/processes.js";
import { BIN } from "../helpers/serveHarness.js";
import { Watch, waitFor } from "../helpers/waitFor.js";
import { floodWithoutNewline, openSilent, type HostilePeer } from "../fixtures/hostilePeer.js";

const cleanups: (() => Promise<void> | void)[] = [];
const markers: string[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  const left = markers.splice(0).flatMap(pidsWithMarker);
  killAll(left);
  expect(left, "processes left behind").toEqual([]);
});

/**
 * `abridge daemon` in the foreground as a real process (optionally under a descriptor limit),
 * with the hostile fixture's echo tool; resolves once its lockfile names it.
 */
async function startDaemonProcess(
  options: { nofile?: number } = {},
): Promise<{ child: ChildProcess; pid: number; address: string; stateDir: string; client: DaemonClient }> {
  const { dir, cleanup } = await tempDir("abridge-preauth-");
  markers.push(dir);
  const stateDir = path.join(dir, "state");
  const toml = [`cache_dir = ${JSON.stringify(path.join(dir, "cache"))}`, fixtureServerToml("hostile", "hostileServer.ts", [dir])].join("\n");
  const config = await writeConfig(dir, toml);
  // On loopback TCP: there any local user can connect, which is what these limits are for.
  const argv = ["--import", "tsx", BIN, "daemon", "--config", config, "--state-dir", stateDir, "--grace-ms", "1000", "--tcp"];
  const command = options.nofile === undefined ? process.execPath : "prlimit";
  const args = options.nofile === undefined ? argv : [`--nofile=${options.nofile}`, process.execPath, ...argv];
  const child = spawn(command, args, { env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "" }, stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  const output = new Watch();
  child.stderr!.on("data", (b: Buffer) => {
    stderr += b.toString("utf8");
    output.changed();
  });
  child.once("exit", () => output.changed());
  const client = new DaemonClient({ stateDir });
  cleanups.push(async () => {
    client.close();
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 15_000);
      await once(child, "exit");
      clearTimeout(timer);
    }
    await cleanup();
  });
  await output.until(() => /listening on/.test(stderr) || child.exitCode !== null, { what: "the daemon to listen", timeoutMs: 60_000 });
  if (child.exitCode !== null) throw new Error(`daemon exited: ${stderr}`);
  const lock = await readLock(lockFilePath(stateDir));
  if (lock.state !== "ok") throw new Error(`no lockfile: ${lock.state}`);
  return { child, pid: lock.lock.pid, address: lock.lock.address, stateDir, client };
}

function text(result: unknown): string {
  return ((result as { content: { text: string }[] }).content[0] ?? { text: "" }).text;
}

describe("the daemon before authentication", () => {
  it("100 connections sending 4 MiB each without a newline are cut off early; memory stays bounded; calls go on", async () => {
    const daemon = await startDaemonProcess();
    expect(text(await daemon.client.callTool("hostile", "echo", { text: "before" }))).toBe("before");
    const before = rssBytes(daemon.pid);
    const flood: HostilePeer = await floodWithoutNewline(daemon.address, 100, 4 * 1024 * 1024);
    cleanups.push(() => flood.close());
    // Every one of them is closed by the daemon (the old daemon read on, up to 16 MiB each).
    // The peers count their closed sockets where nothing announces it: polled.
    await waitFor(() => flood.closedCount() === flood.opened, { what: "the daemon to close every flooding connection", timeoutMs: 30_000 });
    const growth = peakRssBytes(daemon.pid) - before;
    expect(growth, `the daemon grew by ${mib(growth)}; the peers sent ${mib(flood.sentBytes())}`).toBeLessThan(64 * 1024 * 1024);
    expect(text(await daemon.client.callTool("hostile", "echo", { text: "after" }))).toBe("after");
    const stats = (await daemon.client.stats()).daemon as { refused: number };
    expect(stats.refused).toBeGreaterThanOrEqual(100);
  }, 180_000);

  it("300 silent connections under a 256-descriptor limit do not lock the token holder out, and are all closed", async () => {
    const daemon = await startDaemonProcess({ nofile: 256 });
    const silent = await openSilent(daemon.address, 300);
    cleanups.push(() => silent.close());
    // The token holder gets in while they are open, with a large first request too (its token
    // comes first, so the daemon sees it in the first bytes).
    expect(text(await daemon.client.callTool("hostile", "echo", { text: "in" }))).toBe("in");
    const big = "y".repeat(150 * 1024);
    expect(text(await daemon.client.callTool("hostile", "echo", { text: big }))).toHaveLength(big.length);
    // The oldest made room at once; the rest go at the pre-auth deadline.
    await waitFor(() => silent.closedCount() === silent.opened, {
      what: `the daemon to close every silent connection (${silent.opened} opened)`,
      timeoutMs: 60_000,
      detail: () => `closed ${silent.closedCount()}`,
    });
    const stats = (await daemon.client.stats()).daemon as { evicted: number; openConnections: number };
    expect(stats.evicted).toBeGreaterThanOrEqual(300 - 64);
  }, 180_000);
});
