import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { AbridgeError, ErrorCode } from "../src/model/errors.js";
import { peakRssMiB, sleep } from "./measure.js";
import { isPidAlive } from "../src/upstream/process/childStdioTransport.js";

/** Something the bench calls tools on: a connected SDK client and how to end it. */
export interface Connected {
  /** Calls `tool` with `args`; resolves when the answer is in. */
  call(tool: string, args: Record<string, unknown>, signal?: AbortSignal): Promise<unknown>;
  /** `tools/list` (every page). */
  listTools(signal?: AbortSignal): Promise<number>;
  /** Pid of the process that serves (serve, mcp-proxy), when it is a child of ours. */
  pid?: number;
  /** Ends the connection and every process it started; idempotent. */
  close(): Promise<void>;
}

const CLIENT_INFO = { name: "abridge-bench", version: "0.1.0" };

function wrap(client: Client, close: () => Promise<void>, pid?: number): Connected {
  let closing: Promise<void> | undefined;
  return {
    call: (tool, args, signal) => client.callTool({ name: tool, arguments: args }, undefined, signal ? { signal } : {}),
    async listTools(signal) {
      let count = 0;
      let cursor: string | undefined;
      do {
        const page = await client.listTools(cursor === undefined ? {} : { cursor }, signal ? { signal } : {});
        count += page.tools.length;
        cursor = page.nextCursor;
      } while (cursor !== undefined);
      return count;
    },
    ...(pid !== undefined ? { pid } : {}),
    close: () => (closing ??= close()),
  };
}

/** True while `pid` exists. */
export const isAlive = isPidAlive;

/** Waits up to `ms` for `pid` to exit, then SIGKILLs it: no bench run leaves a child behind. */
async function reap(pid: number | undefined, ms = 5_000): Promise<void> {
  if (pid === undefined) return;
  const deadline = Date.now() + ms;
  while (isAlive(pid) && Date.now() < deadline) await sleep(25);
  if (isAlive(pid)) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // gone in between
    }
  }
}

/**
 * Connects over stdio to `command args` (spawned by the SDK transport, stderr dropped). `peak`
 * reads the child's peak RSS just before it is closed.
 */
export async function connectStdio(command: string, args: string[], options: { cwd?: string; signal?: AbortSignal } = {}): Promise<Connected> {
  const transport = new StdioClientTransport({ command, args, stderr: "ignore", ...(options.cwd ? { cwd: options.cwd } : {}) });
  const client = new Client(CLIENT_INFO);
  await client.connect(transport, options.signal ? { signal: options.signal, timeout: 120_000 } : { timeout: 120_000 });
  const pid = transport.pid ?? undefined;
  return wrap(
    client,
    async () => {
      await client.close();
      await reap(pid);
    },
    pid,
  );
}

/** A detached child in its own process group, so one signal ends it and whatever it started. */
export function spawnGroup(command: string, args: string[], cwd?: string): ChildProcess {
  return spawn(command, args, { stdio: ["ignore", "ignore", "pipe"], detached: true, ...(cwd ? { cwd } : {}) });
}

/** Ends a process group started by {@link spawnGroup}: SIGTERM, then SIGKILL after a grace period. */
export async function killGroup(child: ChildProcess): Promise<void> {
  const pid = child.pid;
  if (pid === undefined) return;
  const signalGroup = (sig: NodeJS.Signals): void => {
    try {
      process.kill(-pid, sig);
    } catch {
      // the group is gone
    }
  };
  signalGroup("SIGTERM");
  const deadline = Date.now() + 5_000;
  while (isAlive(pid) && Date.now() < deadline) await sleep(25);
  // Whatever is left of the group (the wrapped upstream) goes too.
  signalGroup("SIGKILL");
}

/**
 * Connects over streamable HTTP to `url`, retrying until the server listens (a child that was just
 * spawned) or `timeoutMs` passes.
 */
export async function connectHttp(
  url: string,
  options: { timeoutMs?: number; signal?: AbortSignal; onClose?: () => Promise<void>; pid?: number } = {},
): Promise<Connected> {
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  let lastError: unknown;
  while (Date.now() < deadline) {
    options.signal?.throwIfAborted();
    const client = new Client(CLIENT_INFO);
    try {
      await client.connect(new StreamableHTTPClientTransport(new URL(url)), { timeout: 10_000 });
      return wrap(
        client,
        async () => {
          await client.close().catch(() => {});
          await options.onClose?.();
        },
        options.pid,
      );
    } catch (err) {
      lastError = err;
      await client.close().catch(() => {});
      await sleep(200, options.signal);
    }
  }
  await options.onClose?.();
  throw new AbridgeError(ErrorCode.UPSTREAM_TIMEOUT, `no MCP server answered at ${url}`, { cause: lastError });
}

/** Peak RSS (MiB) of a connected target's process, when it is ours and alive. */
export function targetPeakRss(target: Connected): number | undefined {
  return target.pid === undefined ? undefined : peakRssMiB(target.pid);
}

/** True when `file` exists: guards rows whose software is not installed. */
export function installed(file: string): boolean {
  return existsSync(file);
}
