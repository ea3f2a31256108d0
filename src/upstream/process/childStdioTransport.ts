import { spawn, type ChildProcess } from "node:child_process";
import { PassThrough, type Readable, type Writable } from "node:stream";
import { getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { ErrorCode as RpcCode, JSONRPCMessageSchema, McpError, RELATED_TASK_META_KEY, type JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { AbridgeError, ErrorCode, messageOf } from "../../model/errors.js";
import { isObject } from "../../model/json.js";
import { BoundedLineReader, type DroppedLine } from "../../util/boundedLineReader.js";
import { DEFAULT_MAX_QUEUED_LINE_BYTES, LineWriter } from "../../util/lineWriter.js";
import { isPidAlive } from "../../util/pidAlive.js";
import type { ProcessGroupWatch } from "./childWatchdog.js";
import { DirectRequests } from "./directRequests.js";
import { delay } from "../../model/timers.js";

/** How often a pid is probed while waiting for a child to go away. */
const REAP_POLL_MS = 25;
/** After a SIGKILL, how long to wait before sending SIGKILL again. */
const REKILL_AFTER_MS = 2_000;

export { isPidAlive };

/** Resolves once `pid` is gone, re-sending SIGKILL now and then in case the first was missed. */
export async function waitForPidExit(pid: number): Promise<void> {
  let waitedMs = 0;
  while (isPidAlive(pid)) {
    await delay(REAP_POLL_MS);
    waitedMs += REAP_POLL_MS;
    if (waitedMs >= REKILL_AFTER_MS) {
      waitedMs = 0;
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // Already gone between the probe and the kill.
      }
    }
  }
}

/**
 * The environment of a stdio server: the SDK's default safe set (HOME, LOGNAME, PATH, SHELL,
 * TERM, USER on POSIX) with the configured `env` on top. The rest of abridge's own environment is
 * deliberately NOT inherited: it may hold other servers' tokens and the summarizer's API key, and
 * a server should only see the secrets its config entry hands it.
 */
export function childEnvironment(env: Record<string, string>): Record<string, string> {
  return { ...getDefaultEnvironment(), ...env };
}

/** Default bound of one message from an upstream server: far above any sane result, far below memory trouble. */
export const DEFAULT_MAX_MESSAGE_BYTES = 256 * 1024 * 1024;
/** How long a child has to exit after its stdin ends, and again after SIGTERM. */
export interface CloseGrace {
  stdinMs: number;
  sigtermMs: number;
}

/** The SDK's periods: a server restarted or retired mid-session has time to finish its writes. */
export const DEFAULT_CLOSE_GRACE: CloseGrace = { stdinMs: 2_000, sigtermMs: 2_000 };

/**
 * When abridge itself stops (stdin closed, SIGINT, SIGTERM): a client that closed its end expects
 * the whole tree gone within about two seconds, so the steps are short; a server that ignores the
 * end of its stdin and SIGTERM is killed within 1.2 s.
 */
export const SHUTDOWN_CLOSE_GRACE: CloseGrace = { stdinMs: 700, sigtermMs: 500 };
const ID = String.raw`(-?\d+|"(?:[^"\\]|\\.)*")`;
/** `{"jsonrpc":"2.0","id":7,"result":` — the id first, as most non-JS SDKs write it. */
const ID_FIRST = new RegExp(String.raw`^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*${ID}\s*,\s*"(?:result|error)"\s*:`);
/** `{"result":` — a response whose id comes last, as the TypeScript SDK writes it. */
const RESULT_FIRST = /^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"(?:result|error)"\s*:/;
/** `..."id":7}` or `..."id":7,"jsonrpc":"2.0"}` at the very end of the line. */
const ID_LAST = new RegExp(String.raw`"id"\s*:\s*${ID}\s*(?:,\s*"jsonrpc"\s*:\s*"2\.0"\s*)?\}\s*$`);

/**
 * The id of a dropped line when it is recognisably a JSON-RPC response (a request or
 * notification from the server has no pending call to fail). Only the line's two ends are known,
 * so this reads the id where serializers put it: first, or last after a leading `result`/`error`.
 */
export function responseIdOfDroppedLine(line: DroppedLine): string | number | undefined {
  const first = ID_FIRST.exec(line.head);
  const raw = first ? first[1] : RESULT_FIRST.test(line.head) ? ID_LAST.exec(line.tail)?.[1] : undefined;
  if (raw === undefined) return undefined;
  try {
    return JSON.parse(raw) as string | number;
  } catch {
    return undefined;
  }
}

/** How to start a stdio server (the SDK's `StdioServerParameters`, plus the message bound). */
export interface ChildStdioParams {
  command: string;
  args?: string[];
  /** The child's environment, on top of the SDK's safe default set (unless `exactEnv`). */
  env?: Record<string, string>;
  /** Give the child exactly `env`, without the default set (a sandbox names every variable). */
  exactEnv?: boolean;
  cwd?: string;
  /** `"pipe"` makes {@link ChildStdioTransport.stderr} a stream to read; default `"inherit"`. */
  stderr?: "pipe" | "inherit" | "ignore";
  /**
   * Largest message accepted from the server (default 256 MiB). A larger one is dropped as it
   * arrives; the request it answers fails with "result over N bytes" and the connection goes on.
   */
  maxMessageBytes?: number;
  /**
   * Bytes of messages that may wait while the server does not read its stdin (default 64 MiB); past
   * it {@link ChildStdioTransport.send} fails with `UPSTREAM_BUSY` (retryable) and writes nothing.
   */
  maxQueuedBytes?: number;
  /**
   * Starts the child as the leader of its own process group, registered with this watchdog, so
   * that the child and everything it starts end even when abridge is killed with SIGKILL; close()
   * then signals the whole group.
   */
  watchdog?: ProcessGroupWatch;
}

/**
 * Client transport to a stdio MCP server in a child process, in place of the SDK's
 * `StdioClientTransport`, for two reasons. Reading: the SDK's `ReadBuffer` caps a message at
 * 10 MiB and, when a server sends more (a 50 MB file read), closes the transport, so the call
 * failed as UPSTREAM_EXITED and the server was restarted; here messages up to `maxMessageBytes`
 * are read (chunks joined once), a larger one is dropped and only its request fails. Closing: the
 * SDK ends stdin, waits 2 s, sends SIGTERM, waits 2 s, sends SIGKILL but returns without waiting
 * for the SIGKILL to take effect; here `close()` is idempotent (the promise is kept) and resolves
 * only when the pid is gone, so a pool's `close()` can promise that no process is left behind. A
 * spawn that failed (ENOENT) has no process to end and closes at once. Writing: the SDK waited for
 * `drain` with one listener per write that met backpressure, so a server that stopped reading
 * while 100,000 requests were sent cost a quadratic walk of those listeners once it read again;
 * here requests wait in one bounded queue behind one `drain` listener (see {@link LineWriter}).
 */
export class ChildStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  private readonly params: ChildStdioParams;
  private readonly reader: BoundedLineReader;
  private readonly stderrStream: PassThrough | undefined;
  private child: ChildProcess | undefined;
  private spawnedPid: number | undefined;
  private exited = false;
  private exitStatus: number | null | undefined;
  private exitSignalName: NodeJS.Signals | null | undefined;
  private closedNotified = false;
  private closing: Promise<void> | undefined;
  private starting: Promise<void> | undefined;
  /** The grace of the close under way: the shortest any caller of {@link close} asked for. */
  private grace: CloseGrace = DEFAULT_CLOSE_GRACE;
  /** Writes to the child's stdin: one queue, one `drain` listener, one writev per tick. */
  private writer: LineWriter | undefined;
  /**
   * Requests sent past the SDK client (`tools/call`: see {@link DirectRequests}); their answers
   * are taken off the pipe before the SDK's parsing.
   */
  readonly direct = new DirectRequests((message) => this.send(message));

  constructor(params: ChildStdioParams) {
    this.params = params;
    this.reader = new BoundedLineReader(params.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES);
    // Handed out before start() so that nothing the child writes early is missed.
    if (params.stderr === "pipe") this.stderrStream = new PassThrough();
  }

  /** The child's stderr when `stderr: "pipe"` was asked for (available before `start()`). */
  get stderr(): Readable | null {
    return this.stderrStream ?? null;
  }

  /** Pid of the child while it runs. */
  get pid(): number | null {
    return this.exited ? null : (this.spawnedPid ?? null);
  }

  /** The child's exit code once it has exited (null when a signal ended it), else undefined. */
  get exitCode(): number | null | undefined {
    return this.exitStatus;
  }

  /** The signal that ended the child once it has exited (null when it exited by itself), else undefined. */
  get exitSignal(): NodeJS.Signals | null | undefined {
    return this.exitSignalName;
  }

  /** The child's stdin while it runs, for inspection (messages go through {@link send}). */
  get stdin(): Writable | null {
    return this.exited ? null : (this.child?.stdin ?? null);
  }

  /** Bytes of messages waiting for the child to read its stdin. */
  get queuedBytes(): number {
    return this.writer?.queuedBytes ?? 0;
  }

  /**
   * True while the messages waiting for the child to read its stdin are at their bound: the next
   * {@link send} would fail with `UPSTREAM_BUSY`.
   */
  get backlogged(): boolean {
    return this.writer?.full ?? false;
  }

  /** Pid of the child once spawned; kept after it exits. */
  get childPid(): number | undefined {
    return this.spawnedPid;
  }

  start(): Promise<void> {
    if (this.starting) return Promise.reject(new Error("ChildStdioTransport already started"));
    this.starting = new Promise<void>((resolve, reject) => {
      const child = spawn(this.params.command, this.params.args ?? [], {
        env: this.params.exactEnv ? { ...this.params.env } : { ...getDefaultEnvironment(), ...this.params.env },
        stdio: ["pipe", "pipe", this.params.stderr === "pipe" ? "pipe" : (this.params.stderr ?? "inherit")],
        shell: false,
        windowsHide: true,
        ...(this.params.watchdog !== undefined ? { detached: true } : {}),
        ...(this.params.cwd !== undefined ? { cwd: this.params.cwd } : {}),
      });
      this.child = child;
      if (child.stdin) this.writer = new LineWriter(child.stdin, { maxQueuedBytes: this.params.maxQueuedBytes ?? DEFAULT_MAX_QUEUED_LINE_BYTES });
      child.once("spawn", () => {
        this.spawnedPid = child.pid;
        if (child.pid !== undefined) this.params.watchdog?.watch(child.pid);
        resolve();
      });
      child.on("error", (err) => {
        reject(err);
        this.onerror?.(err);
      });
      child.once("exit", () => {
        // The group's id may be reused once its leader is reaped: stop watching it now.
        if (child.pid !== undefined) this.params.watchdog?.unwatch(child.pid);
      });
      child.once("close", (code, signal) => {
        this.exited = true;
        this.exitStatus = code;
        this.exitSignalName = signal;
        this.reader.clear();
        this.writer?.close();
        this.notifyClosed();
      });
      child.stdin?.on("error", (err) => this.onerror?.(err));
      child.stdout?.on("error", (err) => this.onerror?.(err));
      child.stdout?.on("data", (chunk: Buffer) => this.onData(chunk));
      if (this.stderrStream && child.stderr) child.stderr.pipe(this.stderrStream);
    });
    return this.starting;
  }

  /**
   * Writes `message`, or queues it while the child does not read its stdin. Resolves once it is
   * written or queued. Rejects, writing nothing, when the child is gone ("Not connected"), with
   * `INPUT_INVALID` when the message has no JSON form (a BigInt, a cycle, nesting too deep for
   * `JSON.stringify`), and with `UPSTREAM_BUSY` (retryable) while the queue is at its bound: each
   * fails its own request only, and the connection goes on.
   */
  send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.child?.stdin;
    const writer = this.writer;
    if (!stdin || !writer || this.exited || this.closing || !stdin.writable) return Promise.reject(new Error("Not connected"));
    let line: string;
    try {
      line = `${JSON.stringify(message)}\n`;
    } catch (err) {
      return Promise.reject(new AbridgeError(ErrorCode.INPUT_INVALID, `the message cannot be written as JSON: ${messageOf(err)}`, { cause: err }));
    }
    if (writer.write(line)) return Promise.resolve();
    return Promise.reject(
      new AbridgeError(
        ErrorCode.UPSTREAM_BUSY,
        `${writer.queuedBytes} bytes of messages wait for the server to read its stdin (the limit is ${writer.limit}); try again shortly`,
        {
          retryable: true,
        },
      ),
    );
  }

  /**
   * Ends the child: stdin end, then SIGTERM, then SIGKILL, each step after its grace, and resolves
   * once the pid is gone. Idempotent; a later call with a shorter `grace` shortens a close already
   * under way (the bridge shutting down while a restart retires an old process).
   */
  close(grace: CloseGrace = DEFAULT_CLOSE_GRACE): Promise<void> {
    this.grace = { stdinMs: Math.min(this.grace.stdinMs, grace.stdinMs), sigtermMs: Math.min(this.grace.sigtermMs, grace.sigtermMs) };
    this.closing ??= this.closeAndReap();
    return this.closing;
  }

  private onData(chunk: Buffer): void {
    for (const event of this.reader.push(chunk)) {
      if ("dropped" in event) {
        this.onDropped(event.dropped);
        continue;
      }
      if (event.line.trim() === "") continue;
      let message: JSONRPCMessage;
      try {
        const value: unknown = JSON.parse(event.line);
        if (this.direct.take(value)) continue;
        message = isPlainResultResponse(value) ? value : JSONRPCMessageSchema.parse(value);
      } catch (err) {
        // A line that is not JSON-RPC (a stray log line on stdout) is reported and skipped.
        this.onerror?.(err instanceof Error ? err : new Error(String(err)));
        continue;
      }
      this.onmessage?.(message);
    }
  }

  /**
   * A message over the bound was dropped. When it answers one of our requests, that request is
   * failed now (an error response in its place) instead of waiting out its timeout.
   */
  private onDropped(line: DroppedLine): void {
    const limit = this.reader.maxLineBytes;
    const id = responseIdOfDroppedLine(line);
    this.onerror?.(
      new Error(
        `dropped a message of ${line.bytes} bytes from the server: over the ${limit}-byte limit${id === undefined ? "" : ` (the answer to request ${JSON.stringify(id)})`}`,
      ),
    );
    if (id === undefined) return;
    const error = { code: RpcCode.InternalError, message: `result over ${limit} bytes (${line.bytes} bytes); dropped` };
    if (this.direct.fail(id, McpError.fromError(error.code, error.message))) return;
    this.onmessage?.({ jsonrpc: "2.0", id, error });
  }

  private notifyClosed(): void {
    if (this.closedNotified) return;
    this.closedNotified = true;
    this.onclose?.();
    // After the SDK client has heard of the end, as its own requests fail after it has.
    this.direct.close();
  }

  private async closeAndReap(): Promise<void> {
    // A close that races the spawn must wait for it, or the child would be born after the reaping.
    await this.starting?.catch(() => undefined);
    const child = this.child;
    const pid = this.spawnedPid;
    if (child === undefined || pid === undefined) {
      // Never spawned: no 'close' of a process will come.
      this.notifyClosed();
      return;
    }
    if (!this.exited) {
      // Re-reads the grace as it waits: a close() with a shorter grace may come meanwhile.
      const within = async (step: keyof CloseGrace): Promise<void> => {
        const started = Date.now();
        while (!this.exited && Date.now() - started < this.grace[step]) await delay(REAP_POLL_MS);
      };
      // What still waits to be written is let go: nothing may be written after the end.
      this.writer?.close();
      try {
        child.stdin?.end();
      } catch {
        // The pipe is already broken: the signals below still apply.
      }
      await within("stdinMs");
      // A child in its own group is signalled with its group: what it started goes with it.
      const target = this.params.watchdog !== undefined ? -pid : pid;
      if (!this.exited) {
        signal(target, "SIGTERM");
        await within("sigtermMs");
      }
      if (!this.exited) signal(target, "SIGKILL");
    }
    await waitForPidExit(pid);
  }
}

/**
 * True for a result response the SDK's message schema would pass on unchanged: exactly
 * `jsonrpc`, `id` and an object `result` whose `_meta`, if any, holds none of the two keys the
 * schema gives a type. Answers are most of what a server sends under load, and the schema's
 * union of four object parsers per line was the largest share of reading them.
 */
function isPlainResultResponse(value: unknown): value is JSONRPCMessage {
  if (!isObject(value) || value.jsonrpc !== "2.0") return false;
  let keys = 0;
  for (const key in value) {
    if (key !== "jsonrpc" && key !== "id" && key !== "result") return false;
    keys += 1;
  }
  const { id, result } = value;
  if (keys !== 3 || !isObject(result)) return false;
  if (typeof id !== "string" && !(typeof id === "number" && Number.isInteger(id))) return false;
  const meta = result._meta;
  if (meta === undefined) return true;
  return isObject(meta) && !("progressToken" in meta) && !(RELATED_TASK_META_KEY in meta);
}

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch {
    // Already gone.
  }
}
