import { accessSync, constants, existsSync } from "node:fs";
import path from "node:path";
import type { ServerConfig } from "../config/schema.js";
import { AbridgeError, ErrorCode } from "../errors.js";

/** A command line ready for spawning. */
export interface SandboxedCommand {
  command: string;
  args: string[];
  /** Environment of the spawned `bwrap` itself (the sandbox gets only what `--setenv` names). */
  env: Record<string, string>;
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
 * writable paths only from `sandbox_write`, and an environment of exactly PATH, HOME and the
 * variables the config names. `--die-with-parent` takes the sandbox down with abridge even on
 * `kill -9`; `--new-session` stops the server from typing into abridge's terminal (TIOCSTI).
 */
export function bwrapArgs(config: ServerConfig, baseEnv: Record<string, string>): string[] {
  if (config.command === undefined) {
    throw new AbridgeError(ErrorCode.CONFIG_INVALID, `${config.name}: a sandboxed server needs a command`);
  }
  const args = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--unshare-all"];
  if (config.sandbox_network) args.push("--share-net");
  args.push("--die-with-parent", "--new-session");
  // After /tmp's tmpfs, so a writable path under /tmp is bound over it rather than hidden by it.
  for (const dir of config.sandbox_write) args.push("--bind", dir, dir);
  args.push("--clearenv");
  const env: Record<string, string> = {};
  if (baseEnv.PATH !== undefined) env.PATH = baseEnv.PATH;
  if (baseEnv.HOME !== undefined) env.HOME = baseEnv.HOME;
  Object.assign(env, config.env);
  for (const [key, value] of Object.entries(env)) args.push("--setenv", key, value);
  if (config.cwd !== undefined) args.push("--chdir", config.cwd);
  args.push("--", config.command, ...config.args);
  return args;
}

/**
 * Wraps a stdio server's command in bubblewrap. `baseEnv` is the environment the server would
 * otherwise get (abridge's safe defaults with the config's `env` on top); its PATH also finds
 * `bwrap`.
 *
 * @throws AbridgeError UPSTREAM_START_FAILED when `bwrap` is not installed: a server the operator
 *   asked to sandbox never runs unsandboxed.
 */
export function sandboxCommand(config: ServerConfig, baseEnv: Record<string, string>): SandboxedCommand {
  const bwrap = findExecutable("bwrap", baseEnv.PATH);
  if (bwrap === undefined) {
    throw new AbridgeError(
      ErrorCode.UPSTREAM_START_FAILED,
      `${config.name}: sandbox = "bwrap" but bwrap was not found on PATH; install bubblewrap (Debian: apt-get install bubblewrap) or set sandbox = "none"`,
    );
  }
  for (const dir of config.sandbox_write) {
    // bwrap's own message ("Can't find source path") reaches only the stderr tail; say it plainly.
    if (!existsSync(dir)) {
      throw new AbridgeError(ErrorCode.UPSTREAM_START_FAILED, `${config.name}: sandbox_write path ${dir} does not exist; create it first`);
    }
  }
  // bwrap itself needs nothing from the environment; the sandbox's variables go in as --setenv.
  return { command: bwrap, args: bwrapArgs(config, baseEnv), env: { PATH: baseEnv.PATH ?? "" } };
}
