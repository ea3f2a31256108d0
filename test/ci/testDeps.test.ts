/**
 * `.ci/test-deps`, run by bash with a PATH of its own: the tools it uses linked from the machine,
 * no bwrap, redis-server or nats-server (so it has something to install), and an `apt-get` that is
 * a small script logging its command line and failing or succeeding as the test says. `apt-config`
 * is the real one, pointed by APT_CONFIG at lists and dpkg folders in a temporary folder, so the
 * lock the script waits for is a real file locked by a real process, not the machine's.
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { chmod, mkdir, readFile, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { useTempDir } from "../helpers/tempDir.js";

const SCRIPT = path.resolve(".ci/test-deps");

/** The machine's path of `command`. */
function which(command: string): string {
  return execFileSync("bash", ["-c", `command -v ${command}`], { encoding: "utf8" }).trim();
}

const BASH = which("bash");
/** What the script runs besides apt-get and sudo (bash builtins aside). */
const TOOLS = ["id", "env", "mktemp", "rm", "stat", "tail", "sleep", "true", "apt-config"];

/** A bash script: `apt-get` logs its arguments and environment, then does what FAKE_APT_<COMMAND> says. */
const FAKE_APT_GET = `#!${BASH}
echo "DEBIAN_FRONTEND=\${DEBIAN_FRONTEND:-} $*" >>"$FAKE_APT_LOG"
for word in "$@"; do
  case "$word" in
    update) behaviour=\${FAKE_APT_UPDATE:-ok} ;;
    install) behaviour=\${FAKE_APT_INSTALL:-ok} ;;
  esac
done
case "$behaviour" in
  ok) echo "Reading package lists... Done"; exit 0 ;;
  *) echo "Reading package lists..."; echo "$behaviour" >&2; exit 100 ;;
esac
`;

/** `sudo -n COMMAND...` runs COMMAND (only used when the tests do not run as root). */
const FAKE_SUDO = `#!${BASH}
[ "$1" = -n ] && shift
exec "$@"
`;

interface Run {
  child: ChildProcess;
  stderr(): string;
  /** Resolves once stderr matches (a hang guard rejects). */
  said(pattern: RegExp): Promise<void>;
  exited: Promise<number | null>;
}

const temp = useTempDir({ prefix: "abridge-test-deps-", scope: "all" });
let bin: string;
let aptConfig: string;
let lists: string;
let log: string;
let runs = 0;

beforeAll(async () => {
  bin = path.join(temp.path, "bin");
  await mkdir(bin);
  for (const tool of TOOLS) await symlink(which(tool), path.join(bin, tool));
  await writeFile(path.join(bin, "apt-get"), FAKE_APT_GET);
  await writeFile(path.join(bin, "sudo"), FAKE_SUDO);
  await chmod(path.join(bin, "apt-get"), 0o755);
  await chmod(path.join(bin, "sudo"), 0o755);
  lists = path.join(temp.path, "lists");
  await mkdir(lists);
  await mkdir(path.join(temp.path, "dpkg"));
  for (const lock of [path.join(lists, "lock"), path.join(temp.path, "dpkg", "lock-frontend"), path.join(temp.path, "dpkg", "lock")]) await writeFile(lock, "");
  aptConfig = path.join(temp.path, "apt.conf");
  await writeFile(aptConfig, `Dir::State::Lists "${lists}/";\nDir::State::status "${path.join(temp.path, "dpkg", "status")}";\n`);
});

/** Runs the script with PATH = the test's bin folder (or `pathDirs`) and the fake apt-get's settings. */
function runScript(settings: Record<string, string>, pathDirs = [bin]): Run {
  log = path.join(temp.path, `apt-get-${++runs}.log`);
  const child = spawn(BASH, [SCRIPT], {
    env: { PATH: pathDirs.join(":"), APT_CONFIG: aptConfig, TMPDIR: temp.path, FAKE_APT_LOG: log, ...settings },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  const listeners: (() => void)[] = [];
  child.stderr!.on("data", (b: Buffer) => {
    stderr += b.toString("utf8");
    for (const listener of [...listeners]) listener();
  });
  const exited = new Promise<number | null>((resolve) => child.once("close", (code) => resolve(code)));
  return {
    child,
    stderr: () => stderr,
    exited,
    said(pattern) {
      return new Promise((resolve, reject) => {
        const check = (): void => {
          if (!pattern.test(stderr)) return;
          clearTimeout(timer);
          listeners.splice(listeners.indexOf(check), 1);
          resolve();
        };
        const timer = setTimeout(() => reject(new Error(`test-deps did not print ${pattern} (a hang guard):\n${stderr}`)), 30_000);
        listeners.push(check);
        check();
        void exited.then(() => {
          if (!pattern.test(stderr)) {
            clearTimeout(timer);
            reject(new Error(`test-deps ended without printing ${pattern}:\n${stderr}`));
          }
        });
      });
    },
  };
}

async function aptCalls(): Promise<string[]> {
  return (await readFile(log, "utf8").catch(() => "")).split("\n").filter((l) => l !== "");
}

describe(".ci/test-deps", () => {
  it("shows what apt-get said when it fails, and still exits 0", async () => {
    const run = runScript({
      FAKE_APT_UPDATE: "E: Could not get lock /var/lib/apt/lists/lock. It is held by process 4242 (apt-get)",
      FAKE_APT_INSTALL: "E: Unable to locate package nats-server",
    });
    expect(await run.exited).toBe(0);
    const stderr = run.stderr();
    expect(stderr).toContain("test-deps: installing bubblewrap redis-server nats-server with apt-get");
    expect(stderr).toContain("apt-get update failed; trying the install with the package lists already here:\n");
    expect(stderr).toContain("\n  E: Could not get lock /var/lib/apt/lists/lock. It is held by process 4242 (apt-get)\n");
    expect(stderr).toContain(
      "test-deps: apt-get could not install bubblewrap redis-server nats-server; the tests that start them fail without. apt-get said:\n",
    );
    expect(stderr).toMatch(/apt-get said:\n( {2}.*\n)* {2}E: Unable to locate package nats-server\n$/);
    expect(await aptCalls()).toEqual([
      "DEBIAN_FRONTEND=noninteractive -o DPkg::Lock::Timeout=120 update",
      "DEBIAN_FRONTEND=noninteractive -o DPkg::Lock::Timeout=120 install -y --no-install-recommends bubblewrap redis-server nats-server",
    ]);
  });

  it("installs quietly when apt-get succeeds", async () => {
    const run = runScript({});
    expect(await run.exited).toBe(0);
    expect(run.stderr()).toBe("test-deps: installing bubblewrap redis-server nats-server with apt-get\n");
    expect(await aptCalls()).toHaveLength(2);
  });

  it("says it waits while another process holds apt's lists lock, and runs apt-get only once it is free", async () => {
    const lock = path.join(lists, "lock");
    const holder = spawn("flock", [lock, BASH, "-c", "echo locked; exec cat"], { stdio: ["pipe", "pipe", "inherit"] });
    const holderExited = new Promise<void>((resolve) => holder.once("close", () => resolve()));
    try {
      await new Promise<void>((resolve, reject) => {
        holder.stdout!.on("data", (b: Buffer) => (b.toString("utf8").includes("locked") ? resolve() : undefined));
        holder.once("close", (code) => reject(new Error(`flock exited with ${code}`)));
      });
      const run = runScript({});
      await run.said(new RegExp(`waiting for another apt or dpkg process to release ${lock.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")} \\(up to 120 s\\)`));
      expect(await aptCalls()).toEqual([]);
      holder.stdin!.end();
      await holderExited;
      expect(await run.exited).toBe(0);
      expect(run.stderr()).not.toContain("still locked");
      expect(run.stderr()).not.toContain("could not install");
      expect(await aptCalls()).toHaveLength(2);
    } finally {
      holder.stdin!.end();
      await holderExited;
    }
  });

  it("names the packages to install when there is no apt-get", async () => {
    const noApt = path.join(temp.path, "no-apt");
    await mkdir(noApt);
    for (const tool of TOOLS) await symlink(which(tool), path.join(noApt, tool));
    const run = runScript({}, [noApt]);
    expect(await run.exited).toBe(0);
    expect(run.stderr()).toBe(
      "test-deps: install bubblewrap redis-server nats-server with the system's package manager (there is no apt-get here); the tests that start them fail without\n",
    );
  });

  it("does nothing when the three commands are there", async () => {
    const present = path.join(temp.path, "present");
    await mkdir(present);
    for (const command of ["bwrap", "redis-server", "nats-server"]) {
      await writeFile(path.join(present, command), `#!${BASH}\nexit 0\n`);
      await chmod(path.join(present, command), 0o755);
    }
    const run = runScript({}, [present, bin]);
    expect(await run.exited).toBe(0);
    expect(run.stderr()).toBe("");
    expect(await aptCalls()).toEqual([]);
  });
});
