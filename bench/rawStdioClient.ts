import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { AbridgeError, ErrorCode } from "../src/model/errors.js";
import { killGroup, type Connected } from "./mcpTarget.js";

interface Pending {
  resolve: (result: unknown) => void;
  reject: (error: Error) => void;
}

/**
 * An MCP client over stdio with no SDK on its side: JSON lines written to the child's stdin and
 * read back with node:readline, answers matched by id. With test/fixtures/rawEchoServer.ts at the far end
 * it measures the floor of one pipe hop; in front of `abridge serve` it shows what abridge adds
 * without an SDK client's own cost in the figure. The child runs in its own process group.
 */
export async function connectRawStdio(command: string, args: string[], options: { cwd?: string; signal?: AbortSignal } = {}): Promise<Connected> {
  const child = spawn(command, args, { stdio: ["pipe", "pipe", "ignore"], detached: true, ...(options.cwd ? { cwd: options.cwd } : {}) });
  const pending = new Map<number, Pending>();
  let nextId = 1;
  let ended: Error | undefined;
  const fail = (error: Error): void => {
    ended ??= error;
    for (const p of pending.values()) p.reject(error);
    pending.clear();
  };
  child.once("exit", (code, signal) => fail(new AbridgeError(ErrorCode.UPSTREAM_UNAVAILABLE, `${command} exited (${signal ?? code})`)));
  child.once("error", (err) => fail(err));
  createInterface({ input: child.stdout, crlfDelay: Infinity }).on("line", (line) => {
    const message = JSON.parse(line) as { id?: number; result?: unknown; error?: { message?: string }; method?: string };
    if (message.id === undefined || message.method !== undefined) return;
    const p = pending.get(message.id);
    if (p === undefined) return;
    pending.delete(message.id);
    if (message.error !== undefined) p.reject(new Error(message.error.message ?? "error"));
    else p.resolve(message.result);
  });
  const request = (method: string, params: unknown): Promise<unknown> => {
    if (ended) return Promise.reject(ended);
    const id = nextId++;
    return new Promise((resolve, reject) => {
      pending.set(id, { resolve, reject });
      child.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", id, method, params })}\n`);
    });
  };
  const close = async (): Promise<void> => {
    child.stdin.end();
    await killGroup(child);
  };
  try {
    options.signal?.throwIfAborted();
    await request("initialize", { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "abridge-bench-raw", version: "0.1.0" } });
    child.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" })}\n`);
  } catch (err) {
    await close();
    throw err;
  }
  let closing: Promise<void> | undefined;
  return {
    call: (tool, args) => request("tools/call", { name: tool, arguments: args }),
    listTools: () => countListedTools(request),
    ...(child.pid !== undefined ? { pid: child.pid } : {}),
    close: () => (closing ??= close()),
  };
}

/** Follows `nextCursor` through every `tools/list` page with a raw `request`; the number of tools listed. */
export async function countListedTools(request: (method: string, params: unknown) => Promise<unknown>): Promise<number> {
  let count = 0;
  let cursor: string | undefined;
  do {
    const page = (await request("tools/list", cursor === undefined ? {} : { cursor })) as { tools: unknown[]; nextCursor?: string };
    count += page.tools.length;
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  return count;
}
