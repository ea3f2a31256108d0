import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { AbridgeError, ErrorCode, messageOf } from "../src/model/errors.js";
import { CLI_BIN, tsxCommand } from "./benchConfig.js";
import { REPO_ROOT } from "./corpus.js";
import { connectHttp, connectStdio, killGroup, spawnGroup, type Connected } from "./mcpTarget.js";
import { connectRawHttp } from "./rawHttpClient.js";
import { connectRawStdio } from "./rawStdioClient.js";

const run = promisify(execFile);

/**
 * Why `abridge serve` cannot be benchmarked, or undefined when it can: the command is being built
 * alongside the bench, so its rows say "not available" instead of failing while it is missing.
 */
export async function serveUnavailable(signal?: AbortSignal): Promise<string | undefined> {
  const { command, args } = tsxCommand(CLI_BIN, ["serve", "--help"]);
  try {
    await run(command, args, { cwd: REPO_ROOT, ...(signal ? { signal } : {}) });
    return undefined;
  } catch (err) {
    const stderr = String((err as { stderr?: unknown }).stderr ?? "")
      .trim()
      .split("\n")[0];
    return `abridge serve is not available (${stderr || messageOf(err)})`;
  }
}

/** Common options of a serve child. */
export interface ServeOptions {
  config: string;
  cacheDir: string;
  mode?: string;
  signal?: AbortSignal;
}

function serveArgs(options: ServeOptions, extra: string[] = []): { command: string; args: string[] } {
  return tsxCommand(CLI_BIN, [
    "serve",
    "--config",
    options.config,
    "--cache-dir",
    options.cacheDir,
    "--no-watch",
    ...(options.mode !== undefined ? ["--mode", options.mode] : []),
    ...extra,
  ]);
}

/** `abridge serve` over stdio, connected with the SDK-free client of bench/rawStdioClient.ts. */
export function rawServeOverStdio(options: ServeOptions): Promise<Connected> {
  const { command, args } = serveArgs(options);
  return connectRawStdio(command, args, { cwd: REPO_ROOT, ...(options.signal ? { signal: options.signal } : {}) });
}

/** `abridge serve` over stdio, connected with the SDK client. */
export function serveOverStdio(options: ServeOptions): Promise<Connected> {
  const { command, args } = serveArgs(options);
  return connectStdio(command, args, { cwd: REPO_ROOT, ...(options.signal ? { signal: options.signal } : {}) });
}

/** Which client a serve-over-HTTP target is reached with. */
export type HttpClientKind = "sdk" | "raw";

/**
 * `abridge serve --http 127.0.0.1:0` in its own process group: the URL is read from the line it
 * prints to stderr, then a client connects over streamable HTTP: the SDK's (default), or the
 * SDK-free keep-alive client of bench/rawHttpClient.ts (`client: "raw"`), which measures the
 * server rather than the SDK client's own ceiling.
 */
export async function serveOverHttp(options: ServeOptions & { client?: HttpClientKind }): Promise<Connected> {
  const { command, args } = serveArgs(options, ["--http", "127.0.0.1:0"]);
  const child = spawnGroup(command, args, REPO_ROOT);
  const url = await new Promise<string>((resolve, reject) => {
    let text = "";
    const timer = setTimeout(() => reject(new AbridgeError(ErrorCode.UPSTREAM_TIMEOUT, `serve --http printed no URL in 120 s: ${text.slice(-500)}`)), 120_000);
    child.stderr?.setEncoding("utf8");
    child.stderr?.on("data", (chunk: string) => {
      text += chunk;
      const match = /(http:\/\/127\.0\.0\.1:\d+\/\S*)/.exec(text);
      if (match?.[1]) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new AbridgeError(ErrorCode.UPSTREAM_EXITED, `serve --http exited (${code}) before listening: ${text.slice(-500)}`));
    });
  }).catch(async (err: unknown) => {
    await killGroup(child);
    throw err;
  });
  // Keep draining stderr so a chatty child never blocks on a full pipe.
  child.stderr?.resume();
  const connect = options.client === "raw" ? connectRawHttp : connectHttp;
  return connect(url, {
    onClose: () => killGroup(child),
    ...(child.pid !== undefined ? { pid: child.pid } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
  });
}
