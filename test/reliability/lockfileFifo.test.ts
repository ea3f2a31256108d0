/**
 * A FIFO (or a directory) planted at the lockfile's path: reading it used to wait forever for a
 * writer, in a libuv thread where even SIGTERM could not end the wait, so `daemon status` hung.
 * The lockfile is opened without blocking and refused unless it is a regular file.
 */
import { spawn, execFileSync } from "node:child_process";
import { mkdir } from "node:fs/promises";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { readLock } from "../../src/daemon/wire/lockfile.js";
import { BIN } from "../helpers/serveHarness.js";
import { useTempDir } from "../helpers/tempDir.js";

const temp = useTempDir({ prefix: "abridge-fifo-" });
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Runs the CLI as a child (a hang must not take the test worker with it); SIGKILL after `limitMs`. */
function runChild(args: string[], limitMs: number): Promise<{ code: number | null; stderr: string; killed: boolean }> {
  const child = spawn(process.execPath, ["--import", "tsx", BIN, ...args], {
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "" },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (b: Buffer) => (stderr += b.toString("utf8")));
  let killed = false;
  const timer = setTimeout(() => {
    killed = true;
    child.kill("SIGKILL");
  }, limitMs);
  cleanups.push(() => {
    clearTimeout(timer);
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  });
  return new Promise((resolve) =>
    child.once("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stderr, killed });
    }),
  );
}

describe("a FIFO at the lockfile path", () => {
  it("daemon status refuses it with a clear error instead of hanging", async () => {
    const stateDir = path.join(temp.path, "state");
    await mkdir(stateDir, { mode: 0o700 });
    execFileSync("mkfifo", [path.join(stateDir, "abridge.lock")]);
    // Generous: start-up under tsx on a loaded machine. A hang is what the limit catches.
    const run = await runChild(["daemon", "status", "--state-dir", stateDir], 45_000);
    expect(run.killed).toBe(false);
    expect(run.code).not.toBe(0);
    expect(run.stderr).toMatch(/lockfile .*abridge\.lock: it is not a regular file \(a FIFO\)/);
    expect(run.stderr).toContain("DAEMON_LOCK_UNTRUSTED");
  });

  it("readLock refuses a FIFO and a directory without blocking", async () => {
    const fifo = path.join(temp.path, "fifo.lock");
    execFileSync("mkfifo", [fifo]);
    await expect(readLock(fifo)).rejects.toMatchObject({ code: "DAEMON_LOCK_UNTRUSTED", message: expect.stringContaining("(a FIFO)") });
    await mkdir(path.join(temp.path, "dir.lock"));
    await expect(readLock(path.join(temp.path, "dir.lock"))).rejects.toMatchObject({
      code: "DAEMON_LOCK_UNTRUSTED",
      message: expect.stringContaining("(a directory)"),
    });
  });
});
