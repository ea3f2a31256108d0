import { readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { afterEach, describe, expect, it } from "vitest";
import { DaemonClient } from "../../../src/daemon/client/daemonClient.js";
import { ensureDaemon, type EnsureDaemonOptions } from "../../../src/daemon/client/ensureDaemon.js";
import { spawnDaemon } from "../../../src/daemon/client/spawnDaemon.js";
import { lockFilePath, readLock } from "../../../src/daemon/wire/lockfile.js";
import { fixtureServerToml, pidsWithMarker, runAbridge } from "../../helpers/cliHarness.js";
import { isAlive, killAll } from "../../helpers/processes.js";
import { waitFor } from "../../helpers/waitFor.js";
import { testSetup } from "../daemonHarness.js";

/** Temp dirs of this file's tests: every process whose command line names one is ours. */
const markers: string[] = [];
const clients: DaemonClient[] = [];

afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  const dirs = markers.splice(0);
  // Daemons are meant to outlive their spawner: stop them the way a user would (SIGTERM), which
  // must also end their upstream children.
  for (const dir of dirs) for (const pid of pidsWithMarker(`${dir}/state`)) process.kill(pid, "SIGTERM");
  // Processes that are not our children announce their end by no event: polled. What is left after
  // the wait is reported below.
  const alive = (): number[] => dirs.flatMap((dir) => pidsWithMarker(dir));
  await waitFor(() => alive().length === 0, { what: "the daemons and their upstreams to end", timeoutMs: 15_000, intervalMs: 100 }).catch(() => undefined);
  const left = alive();
  // What was still running, and what each daemon logged: the failure must say which step hung.
  const report = left.length === 0 ? [] : await Promise.all(dirs.map((dir) => survivorReport(dir)));
  killAll(left);
  expect(left, report.join("\n")).toEqual([]);
});

/** The command line of every process still carrying `dir`, and the tail of its daemon log. */
async function survivorReport(dir: string): Promise<string> {
  const procs = pidsWithMarker(dir).map((pid) => `  ${pid}: ${commandLineOf(pid)}`);
  const log = await readFile(`${dir}/state/daemon.log`, "utf8").catch((err: Error) => `(no daemon.log: ${err.message})`);
  return [
    `${dir}:`,
    ...procs,
    "  daemon.log (last 40 lines):",
    ...log
      .trimEnd()
      .split("\n")
      .slice(-40)
      .map((l) => `    ${l}`),
  ].join("\n");
}

function commandLineOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ").slice(0, 300);
  } catch {
    return "(gone)";
  }
}

async function e2eSetup(extra = ""): Promise<Awaited<ReturnType<typeof testSetup>> & { ensure: EnsureDaemonOptions }> {
  // The daemon runs in the config's folder; the fixture's `--import tsx` needs the repo's.
  const server = fixtureServerToml("echo", "echoServer.ts", ["--tools", "1", "--marker", "MARKER"], `cwd = ${JSON.stringify(process.cwd())}`);
  const setup = await testSetup(server, extra);
  // The fixture's marker is the test dir, so afterEach finds the upstream children too.
  const { writeFile } = await import("node:fs/promises");
  const text = (await readFile(setup.configFile, "utf8")).replace("MARKER", setup.dir);
  await writeFile(setup.configFile, text);
  markers.push(setup.dir);
  return {
    ...setup,
    ensure: {
      stateDir: setup.stateDir,
      config: setup.configFile,
      // Debug lines in daemon.log: a daemon that outlives the test must show where it stopped.
      env: { PATH: process.env.PATH, HOME: process.env.HOME, ABRIDGE_LOG_LEVEL: "debug" },
      timeoutMs: 45_000,
      // afterEach stops daemons with SIGTERM; on a loaded machine the default 10 s grace plus the
      // children's stdin-end/SIGTERM/SIGKILL steps could outlast its 15 s wait.
      daemonArgs: ["--grace-ms", "2000"],
    },
  };
}

// Each test starts real detached daemons (Node + tsx + an upstream): generous on a loaded 2-core box.
describe("ensureDaemon", { timeout: 120_000 }, () => {
  it("starts exactly one daemon for ten concurrent callers", async () => {
    const setup = await e2eSetup();
    const handles = await Promise.all(Array.from({ length: 10 }, () => ensureDaemon(setup.ensure)));
    const pids = new Set(handles.map((h) => h.info.pid));
    expect(pids.size).toBe(1);
    expect(handles.filter((h) => h.spawned)).toHaveLength(1);
    expect(pidsWithMarker(setup.stateDir)).toEqual([...pids]);
    // A later caller finds it without spawning.
    const again = await ensureDaemon(setup.ensure);
    expect(again).toMatchObject({ spawned: false, info: { pid: [...pids][0] } });
    const log = await readFile(`${setup.stateDir}/daemon.log`, "utf8");
    // A unix socket in the state dir: where the platform has them and the path fits one.
    expect(log).toContain(`listening on unix:${setup.stateDir}/daemon.sock`);
    expect(log).not.toContain(again.info.token);
  });

  it("lets one of several daemon processes started at once win the lock; the others exit quietly", async () => {
    const setup = await e2eSetup();
    const { mkdir } = await import("node:fs/promises");
    await mkdir(setup.stateDir, { recursive: true });
    // Straight to the daemon, past ensureDaemon's spawn marker: the lockfile alone must decide.
    const spawned = Array.from({ length: 4 }, () =>
      spawnDaemon({ stateDir: setup.stateDir, configPath: setup.configFile, cwd: setup.dir, env: setup.ensure.env ?? {} }),
    );
    await waitFor(() => spawned.filter((d) => d.exitCode() === undefined).length === 1, { what: "all but one of the daemons to exit" });
    expect(spawned.filter((d) => d.exitCode() === 0)).toHaveLength(3);
    const winner = spawned.find((d) => d.exitCode() === undefined)!;
    const handle = await ensureDaemon(setup.ensure);
    expect(handle).toMatchObject({ spawned: false, info: { pid: winner.pid } });
    expect(await readFile(`${setup.stateDir}/daemon.log`, "utf8")).toContain("already running");
  });

  it("replaces a daemon killed with SIGKILL on the next call (stale lock taken over)", async () => {
    const setup = await e2eSetup();
    const c = new DaemonClient({ stateDir: setup.stateDir, autoStart: setup.ensure });
    clients.push(c);
    expect(await c.callTool("echo", "echo", { text: "one" })).toMatchObject({ content: [{ text: "one" }] });
    const first = await c.connect();
    process.kill(first.pid, "SIGKILL");
    await waitFor(() => !isAlive(first.pid), { what: "the killed daemon to be gone" });
    const stale = await readLock(lockFilePath(setup.stateDir));
    expect(stale.state === "ok" && stale.lock.pid === first.pid).toBe(true);

    expect(await c.callTool("echo", "echo", { text: "two" })).toMatchObject({ content: [{ text: "two" }] });
    const second = await c.connect();
    expect(second.pid).not.toBe(first.pid);
    expect(second.token).not.toBe(first.token);
    expect(pidsWithMarker(setup.stateDir)).toEqual([second.pid]);
  });

  it("serves a plain script that only awaits the client (no timer lets its process exit early)", async () => {
    const setup = await e2eSetup();
    const { execFile } = await import("node:child_process");
    const { fixtureCommand } = await import("../../helpers/processes.js");
    const { command, args } = fixtureCommand("../daemon/hostScript.ts", [setup.stateDir, setup.configFile]);
    const stdout = await new Promise<string>((resolve, reject) =>
      execFile(command, args, { timeout: 90_000 }, (err, out, errText) => (err ? reject(new Error(`${err.message}\n${errText}`)) : resolve(out))),
    );
    const printed = JSON.parse(stdout) as { pid: number; result: unknown };
    expect(printed.result).toMatchObject({ content: [{ text: "from a script" }] });
    expect(pidsWithMarker(setup.stateDir)).toEqual([printed.pid]);
  });

  it("lets the daemon exit after its idle timeout, removing the lockfile", async () => {
    const setup = await e2eSetup("idle_timeout_minutes = 0.02");
    const handle = await ensureDaemon(setup.ensure);
    expect(handle.spawned).toBe(true);
    await waitFor(() => !isAlive(handle.info.pid), { what: "the idle daemon to exit" });
    expect((await readLock(lockFilePath(setup.stateDir))).state).toBe("missing");
    expect(await readFile(`${setup.stateDir}/daemon.log`, "utf8")).toContain("stopped (idle)");
  });

  it("daemon start | status | stop from the CLI, the daemon on loopback TCP (--tcp)", async () => {
    const setup = await e2eSetup();
    const env = { ABRIDGE_STATE_DIR: setup.stateDir };
    const none = await runAbridge(["daemon", "status", "--config", setup.configFile], { env });
    expect(none.code).toBe(1);
    expect(none.stderr).toContain("not running");

    const started = await runAbridge(["daemon", "start", "--config", setup.configFile, "--tcp"], { env });
    expect(started.code, started.stderr).toBe(0);
    expect(started.stdout).toMatch(/daemon started: pid \d+, address 127\.0\.0\.1:\d+/);
    const again = await runAbridge(["daemon", "start", "--config", setup.configFile], { env });
    expect(again.stdout).toContain("already running");

    // `start` returns once the daemon answers; its upstreams may still be connecting.
    const c = new DaemonClient({ stateDir: setup.stateDir });
    clients.push(c);
    expect(await c.listTools()).toHaveLength(3);
    const status = await runAbridge(["daemon", "status", "--state-dir", setup.stateDir]);
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toMatch(/pid\s+\d+/);
    expect(status.stdout).toMatch(/echo\s+ready\s+3 tools/);
    const json = await runAbridge(["daemon", "status", "--json", "--state-dir", setup.stateDir]);
    expect(JSON.parse(json.stdout)).toMatchObject({ catalog: { tools: 3 } });

    const lock = await readLock(lockFilePath(setup.stateDir));
    if (lock.state !== "ok") throw new Error("no lock");
    const stopped = await runAbridge(["daemon", "stop", "--state-dir", setup.stateDir]);
    expect(stopped.code, stopped.stderr).toBe(0);
    expect(isAlive(lock.lock.pid)).toBe(false);
    expect((await runAbridge(["daemon", "status", "--state-dir", setup.stateDir])).code).toBe(1);
    expect((await runAbridge(["daemon", "stop", "--state-dir", setup.stateDir])).stdout).toContain("not running");
  });

  it("daemon start forwards --socket, --cache-dir and --read-only to the daemon it spawns", async () => {
    const setup = await e2eSetup();
    const socket = `${setup.dir}/d.sock`;
    const cacheDir = `${setup.dir}/other-cache`;
    const started = await runAbridge(
      ["daemon", "start", "--config", setup.configFile, "--state-dir", setup.stateDir, "--socket", socket, "--cache-dir", cacheDir, "--read-only"],
      { env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "" } },
    );
    expect(started.code, started.stderr).toBe(0);
    expect(started.stdout).toContain(`address unix:${socket}`);
    const c = new DaemonClient({ stateDir: setup.stateDir });
    clients.push(c);
    // --read-only: only the fixture's readOnlyHint tool is listed.
    expect((await c.listTools()).map((t) => t.name)).toEqual(["echo"]);
    await waitFor(async () => (await readFile(`${cacheDir}/summaries.jsonl`, "utf8").catch(() => "")).includes("echo"), {
      what: "summaries in the --cache-dir",
    });
    // Stopped the way a user would, waiting for it: under load a bare SIGTERM in afterEach can
    // outlast its deadline while the daemon ends its upstream children.
    c.close();
    const stopped = await runAbridge(["daemon", "stop", "--state-dir", setup.stateDir]);
    expect(stopped.code, stopped.stderr).toBe(0);
  });

  it("keeps using a daemon whose heartbeat is late but which answers (a busy machine), and stops it normally", async () => {
    const setup = await e2eSetup();
    // A long interval: the daemon does not rewrite the lock during the test, so the late
    // heartbeat written below stays as a starved timer would leave it.
    const handle = await ensureDaemon({ ...setup.ensure, daemonArgs: [...(setup.ensure.daemonArgs ?? []), "--heartbeat-ms", "600000"] });
    const file = lockFilePath(setup.stateDir);
    const { writeFile } = await import("node:fs/promises");
    const { isLockStale } = await import("../../../src/daemon/wire/lockfile.js");
    const late = { ...handle.info, heartbeat: new Date(Date.now() - 2 * 3_600_000 * 6).toISOString() };
    await writeFile(file, `${JSON.stringify(late)}\n`);
    expect(isLockStale(await readLock(file))).toBe(true);

    // Neither a second caller nor a plain client takes the late heartbeat for a dead daemon.
    const again = await ensureDaemon(setup.ensure);
    expect(again).toMatchObject({ spawned: false, info: { pid: handle.info.pid } });
    const c = new DaemonClient({ stateDir: setup.stateDir });
    clients.push(c);
    expect(await c.callTool("echo", "echo", { text: "still here" })).toMatchObject({ content: [{ text: "still here" }] });
    const status = await runAbridge(["daemon", "status", "--state-dir", setup.stateDir]);
    expect(status.code, status.stderr).toBe(0);
    expect(pidsWithMarker(setup.stateDir)).toEqual([handle.info.pid]);

    c.close();
    const stopped = await runAbridge(["daemon", "stop", "--state-dir", setup.stateDir]);
    expect(stopped.code, stopped.stderr).toBe(0);
    expect(stopped.stdout).toContain(`stopped pid ${handle.info.pid}`);
    expect(stopped.stderr).not.toContain("SIGTERM");
  });

  it("daemon stop ends a hung daemon (stale heartbeat, live pid) with SIGTERM then SIGKILL, children included", async () => {
    const setup = await e2eSetup();
    const { mkdir } = await import("node:fs/promises");
    const { isLockStale } = await import("../../../src/daemon/wire/lockfile.js");
    await mkdir(setup.stateDir, { recursive: true });
    const daemon = spawnDaemon({
      stateDir: setup.stateDir,
      configPath: setup.configFile,
      cwd: setup.dir,
      env: setup.ensure.env ?? {},
      extraArgs: ["--heartbeat-ms", "100"],
    });
    // Wait until this daemon holds the lock: an ensureDaemon call before that would spawn a second
    // daemon, and ours could lose the race and exit before it is frozen.
    await waitFor(
      async () => {
        const seen = await readLock(lockFilePath(setup.stateDir));
        return seen.state === "ok" && seen.lock.pid === daemon.pid;
      },
      { what: "the spawned daemon to hold the lock", timeoutMs: 20_000 },
    );
    await ensureDaemon(setup.ensure);
    const c = new DaemonClient({ stateDir: setup.stateDir });
    clients.push(c);
    await c.callTool("echo", "echo", { text: "up" });
    c.close();
    // Frozen: alive, but no heartbeat and no answers; SIGTERM stays pending, only SIGKILL works.
    process.kill(daemon.pid, "SIGSTOP");
    await waitFor(async () => isLockStale(await readLock(lockFilePath(setup.stateDir))), { what: "the frozen daemon's heartbeat to go stale" });
    const stopped = await runAbridge(["daemon", "stop", "--state-dir", setup.stateDir, "--timeout-ms", "1000"]);
    expect(stopped.code, stopped.stderr).toBe(0);
    expect(stopped.stderr).toContain("SIGTERM");
    expect(stopped.stdout).toContain(`killed hung pid ${daemon.pid} with SIGKILL`);
    expect(isAlive(daemon.pid)).toBe(false);
    // The upstream child was in the daemon's process group.
    await waitFor(() => pidsWithMarker(setup.dir).length === 0, { what: "the upstream child to end with its daemon", timeoutMs: 10_000, intervalMs: 50 });
    expect((await readLock(lockFilePath(setup.stateDir))).state).toBe("missing");
  });
});
