import { accessSync, closeSync, constants, existsSync, mkdirSync, openSync, statSync } from "node:fs";
import path from "node:path";
import type { ServerConfig } from "../../config/schema.js";
import { AbridgeError, ErrorCode } from "../../model/errors.js";

/** A command line ready for spawning. */
export interface SandboxedCommand {
  command: string;
  args: string[];
  /** Environment of the spawned `bwrap`, which passes it on to the sandboxed server as it is. */
  env: Record<string, string>;
  /** Spawn with exactly `env` (no default variables added). */
  exactEnv: true;
}

/** Looks `name` up on a `PATH` string like a shell would; undefined when nowhere executable. */
export function findExecutable(name: string, pathVar: string | undefined): string | undefined {
  if (name.includes("/")) return isExecutable(name) ? name : undefined;
  for (const dir of (pathVar ?? "").split(path.delimiter)) {
    if (dir === "") continue;
    const candidate = path.join(dir, name);
    if (isExecutable(candidate)) return candidate;
  }
  return undefined;
}

function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * The `bwrap` arguments that confine a stdio server: the whole file system read-only, a private
 * `/dev`, `/proc` and `/tmp`, every namespace unshared (no network unless `sandbox_network`),
 * writable paths only from `sandbox_write`, and abridge's own files (`hide`) masked. Paths of
 * `sandbox_read` are bound read-only over the private `/tmp`, before the masks, so a server
 * installed under /tmp runs while abridge's files there stay hidden. The
 * environment is not in these arguments: see {@link sandboxEnvironment}. `--die-with-parent` takes the sandbox down with abridge even on
 * `kill -9`; `--new-session` stops the server from typing into abridge's terminal (TIOCSTI).
 */
export function bwrapArgs(config: ServerConfig, hide: readonly string[] = []): string[] {
  if (config.command === undefined) {
    throw new AbridgeError(ErrorCode.CONFIG_INVALID, `${config.name}: a sandboxed server needs a command`);
  }
  const args = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--unshare-all"];
  if (config.sandbox_network) args.push("--share-net");
  args.push("--die-with-parent", "--new-session");
  for (const dir of config.sandbox_read) args.push("--ro-bind", dir, dir);
  for (const target of hiddenPaths(config, hide)) {
    // A folder becomes an empty tmpfs, a file reads as /dev/null.
    if (target.kind === "dir") args.push("--tmpfs", target.path);
    else args.push("--ro-bind", "/dev/null", target.path);
  }
  // After /tmp's tmpfs and the hidden folders, so a writable path inside one is bound over it
  // rather than hidden by it.
  for (const dir of config.sandbox_write) args.push("--bind", dir, dir);
  if (config.cwd !== undefined) args.push("--chdir", config.cwd);
  args.push("--", config.command, ...config.args);
  return args;
}

/**
 * The sandbox's whole environment: PATH and HOME from `baseEnv`, then the config's `env`. It is
 * handed to bwrap as its process environment (bwrap passes it on), never as `--setenv` arguments:
 * argv is readable by every local user in /proc/<pid>/cmdline, the environment only by the owner.
 */
export function sandboxEnvironment(config: ServerConfig, baseEnv: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = {};
  if (baseEnv.PATH !== undefined) env.PATH = baseEnv.PATH;
  if (baseEnv.HOME !== undefined) env.HOME = baseEnv.HOME;
  return Object.assign(env, config.env);
}

/**
 * Which of `hide` (abridge's own state: the daemon lockfile with its token, spilled outputs of
 * other servers, the audit log, the summary cache, the config file) to mask in the sandbox. A
 * path that is the server's `cwd` or holds it is left visible, or the server could not start.
 */
function hiddenPaths(config: ServerConfig, hide: readonly string[]): { path: string; kind: "dir" | "file" }[] {
  const out: { path: string; kind: "dir" | "file" }[] = [];
  const seen = new Set<string>();
  for (const raw of hide) {
    const target = path.resolve(raw);
    if (seen.has(target) || target === "/") continue;
    seen.add(target);
    if (config.cwd !== undefined && (config.cwd === target || config.cwd.startsWith(`${target}${path.sep}`))) continue;
    let kind: "dir" | "file";
    try {
      kind = statSync(target).isDirectory() ? "dir" : "file";
    } catch {
      continue; // Nothing there to hide (bwrap cannot mount over a missing path).
    }
    out.push({ path: target, kind });
  }
  return out;
}

/**
 * Creates every path of `hide` that does not exist yet (a folder for an entry ending in `/`, else
 * an empty file, both private to the user), so the mask covers it from the spawn on. bwrap can
 * only mount over what exists, and abridge creates its state dir, spilled outputs and audit log
 * lazily: masked only if present at spawn, they were readable from a server started before them.
 * A path that cannot be created is left out, as before: abridge cannot write there either.
 */
export function createMasked(hide: readonly string[]): void {
  for (const raw of hide) {
    const target = path.resolve(raw);
    if (target === "/" || existsSync(target)) continue;
    try {
      if (raw.endsWith("/") || raw.endsWith(path.sep)) {
        mkdirSync(target, { recursive: true, mode: 0o700 });
      } else {
        mkdirSync(path.dirname(target), { recursive: true, mode: 0o700 });
        closeSync(openSync(target, "a", 0o600));
      }
    } catch {
      // Read-only or forbidden: nothing of abridge's can appear there later.
    }
  }
}

/**
 * Wraps a stdio server's command in bubblewrap. `baseEnv` is the environment the server would
 * otherwise get (abridge's safe defaults with the config's `env` on top); its PATH also finds
 * `bwrap`. `hide` is created first where missing (see {@link createMasked}).
 *
 * @throws AbridgeError UPSTREAM_START_FAILED when `bwrap` is not installed: a server the operator
 *   asked to sandbox never runs unsandboxed.
 */
export function sandboxCommand(config: ServerConfig, baseEnv: Record<string, string>, hide: readonly string[] = []): SandboxedCommand {
  const bwrap = findExecutable("bwrap", baseEnv.PATH);
  if (bwrap === undefined) {
    throw new AbridgeError(
      ErrorCode.UPSTREAM_START_FAILED,
      `${config.name}: sandbox = "bwrap" but bwrap was not found on PATH; install bubblewrap (Debian: apt-get install bubblewrap) or set sandbox = "none"`,
    );
  }
  for (const [field, dirs] of [
    ["sandbox_write", config.sandbox_write],
    ["sandbox_read", config.sandbox_read],
  ] as const) {
    for (const dir of dirs) {
      // bwrap's own message ("Can't find source path") reaches only the stderr tail; say it plainly.
      if (!existsSync(dir)) {
        throw new AbridgeError(ErrorCode.UPSTREAM_START_FAILED, `${config.name}: ${field} path ${dir} does not exist; create it first`);
      }
    }
  }
  createMasked(hide);
  return { command: bwrap, args: bwrapArgs(config, hide), env: sandboxEnvironment(config, baseEnv), exactEnv: true };
}
