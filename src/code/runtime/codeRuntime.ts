/**
 * Runs a program a model wrote against the bridge's tools: `runProgram(code, host, limits)`.
 *
 * The program (TypeScript or JavaScript) is the body of an async function: top-level `await` and
 * `return` work. Its types are stripped (transpile.ts), it runs on a worker thread in a fresh
 * QuickJS context (codeWorker.ts, workerPool.ts), and sees one global object per server with one
 * async method per tool, `tools.call(name, args)`, and `console`. Every value crosses the boundary
 * as a JSON copy. Tool calls come here: this side counts them (`max_calls`), holds the ones past
 * `max_concurrent_calls`, calls the host with a signal that aborts when the run ends, and refuses
 * calls once the run's time is up.
 *
 * A program that computes holds its thread, and the runs the thread has begun beside it, until its
 * deadline. A run posted to a thread that a long slice holds before the thread begins it does not
 * wait there: it is withdrawn and posted to another thread (see `watchPlacement`).
 */
import { randomUUID } from "node:crypto";
import type { Logger } from "../../log/logger.js";
import { silentLogger } from "../../log/logger.js";
import { AbridgeError, ErrorCode, messageOf } from "../../model/errors.js";
import { boundedJson } from "./boundedJson.js";
import { MAX_PROGRAM_BYTES, resolveCodeLimits, type CodeLimits, type ResolvedCodeLimits } from "./codeLimits.js";
import { codeNames, type CodeServerName } from "./globalNames.js";
import { positionText } from "./transpile.js";
import { defaultCodePool, LONG_SLICE_MS, nextRunSeq, type CodeWorkerPool, type WorkerLease } from "./workerPool.js";
import type { CallRequest, ConsoleLine, Settlement, WorkerOutcome } from "./workerProtocol.js";

export type { ConsoleLine } from "./workerProtocol.js";

/** What the runtime needs of the bridge: the servers and tools to show, and a way to call one. */
export interface CodeHost {
  /** Servers in config order, each with the tools it exposes (upstream name and exposed name). */
  servers: readonly CodeServerName[];
  /**
   * Calls a tool by its exposed name with a JSON copy of the program's arguments, and resolves
   * with its value (see `toolResultValue`). A tool error, a refusal or an unknown name is thrown
   * as an error with a string `code` and a `message` (an `AbridgeError` does); the program sees
   * it as an exception with the same `code` and `message`. `signal` aborts when the run ends
   * (timeout, cancellation, or the program returned without waiting for the call).
   */
  callTool(exposed: string, args: Record<string, unknown>, context: { signal: AbortSignal; runId: string }): Promise<unknown>;
}

/** Options of {@link runProgram}. */
export interface RunProgramOptions {
  /** Ends the run at once (`CANCELLED`); calls in flight are aborted. */
  signal?: AbortSignal;
  /** Passed to every `callTool` of the run (default: a random UUID). */
  runId?: string;
  /** The workers to run on (default: the process's shared pool). */
  pool?: CodeWorkerPool;
  logger?: Logger;
}

/** A tool call a program made. */
export interface CodeCall {
  /** The exposed name it was made with. */
  tool: string;
  ok: boolean;
  /** The error's code when it failed. */
  code?: string;
  /** From the host's call to its answer. */
  ms: number;
}

/** Why a run failed. */
export interface CodeRunError {
  /** `CODE_ERROR` (a syntax error or an uncaught exception), `CODE_TIMEOUT`, `CODE_MEMORY`, `CODE_LIMIT`, `CANCELLED`, `INTERNAL`. */
  code: ErrorCode;
  /** What went wrong, ending in the program's line and column when there is one. */
  message: string;
  /** 1-based, in the program as written. */
  line?: number;
  column?: number;
  /** For an uncaught tool error: the exposed name called and the tool error's own code. */
  tool?: string;
  toolCode?: string;
}

/** What a run produced. */
export interface CodeRunResult {
  runId: string;
  ok: boolean;
  /** Console lines in the order written (up to the console's bound). */
  console: ConsoleLine[];
  /** Console lines dropped past the bound. */
  consoleDropped: number;
  /** The JSON of the returned value, when the program returned one that JSON can hold. */
  returnJson?: string;
  error?: CodeRunError;
  /** The tool calls made, in the order made (calls refused for `max_calls` or after the time was up are not in it). */
  calls: CodeCall[];
  durationMs: number;
}

/** After its deadline, a run's worker gets this long to stop before its thread is ended. */
const STOP_GRACE_MS = 2_000;

/** A posted run's `claim` word while its thread has not begun it (see RunMessage in workerProtocol.ts). */
const CLAIM_WAITING = 0;
/** The run was taken off that thread: the thread drops it. */
const CLAIM_WITHDRAWN = -1;

/**
 * Runs `code` against `host`'s tools within `limits`. Never throws for what the program does:
 * every failure is in the result's `error`. Throws only for what the caller got wrong
 * (`INPUT_INVALID`): invalid `limits`, or host-given identifiers that are not identifiers or repeat.
 */
export async function runProgram(code: string, host: CodeHost, limits: CodeLimits = {}, options: RunProgramOptions = {}): Promise<CodeRunResult> {
  const started = performance.now();
  const resolved = resolveCodeLimits(limits);
  const deadline = Date.now() + resolved.timeout_ms;
  const runId = options.runId ?? randomUUID();
  const spec = JSON.stringify({
    servers: codeNames(host.servers).map((s) => ({ identifier: s.identifier, tools: s.tools.map((t) => ({ method: t.method, exposed: t.exposed })) })),
  });
  const failed = (error: CodeRunError): CodeRunResult => ({
    runId,
    ok: false,
    console: [],
    consoleDropped: 0,
    error,
    calls: [],
    durationMs: performance.now() - started,
  });

  const size = Buffer.byteLength(code);
  if (size > MAX_PROGRAM_BYTES) {
    return failed({ code: ErrorCode.CODE_LIMIT, message: `the program is ${size} bytes, over the ${MAX_PROGRAM_BYTES} a program may have` });
  }
  if (options.signal?.aborted) return failed({ code: ErrorCode.CANCELLED, message: "the run was cancelled before it started" });
  const run = new ProgramRun(code, spec, host, resolved, deadline, runId, started, options);
  return run.result();
}

/** One run on a worker thread: the calls it makes, its deadline, and how it ends. */
class ProgramRun {
  private readonly seq = nextRunSeq();
  /** Set to 1 to stop the engine at once (its interrupt handler reads it). */
  private readonly stopWord = new Int32Array(new SharedArrayBuffer(4));
  private readonly calls: CodeCall[] = [];
  private readonly queued: (() => void)[] = [];
  private active = 0;
  private callCount = 0;
  /** Aborts the host's calls when the run ends, however it ends. */
  private readonly callsAbort = new AbortController();
  /** Set once the run must stop: its deadline passed, or it was cancelled. */
  private stopReason: "timeout" | "cancelled" | undefined;
  private lease: WorkerLease | undefined;
  /** The `claim` word of the run as last posted (see RunMessage in workerProtocol.ts). */
  private claim: Int32Array | undefined;
  /** The next look at whether the run, posted and not begun, waits on a held thread. */
  private placementTimer: NodeJS.Timeout | undefined;
  private settlements: Settlement[] = [];
  private ended = false;
  private readonly logger: Logger;
  private timers: NodeJS.Timeout[] = [];
  /** Aborts the wait for a worker when the run stops before it has one. */
  private readonly waitAbort = new AbortController();
  private resolveResult!: (result: CodeRunResult) => void;
  private readonly done = new Promise<CodeRunResult>((resolve) => {
    this.resolveResult = resolve;
  });

  constructor(
    private readonly code: string,
    private readonly spec: string,
    private readonly host: CodeHost,
    private readonly limits: ResolvedCodeLimits,
    private readonly deadline: number,
    private readonly runId: string,
    private readonly started: number,
    private readonly options: RunProgramOptions,
  ) {
    this.logger = options.logger ?? silentLogger;
  }

  async result(): Promise<CodeRunResult> {
    const { signal } = this.options;
    const onAbort = (): void => this.stop("cancelled");
    signal?.addEventListener("abort", onAbort, { once: true });
    this.timers.push(setTimeout(() => this.stop("timeout"), Math.max(0, this.deadline - Date.now())));
    try {
      const pool = this.options.pool ?? defaultCodePool();
      this.lease = await pool.acquire(this.seq, { onMessage: (m) => this.onMessage(m), onExit: (reason) => this.onExit(reason) }, this.waitAbort.signal);
    } catch (err) {
      if (this.stopReason === undefined) this.end({ kind: "engine", message: messageOf(err) }, [], 0);
      else this.end({ kind: "interrupted" }, [], 0);
      signal?.removeEventListener("abort", onAbort);
      return this.done;
    }
    if (this.stopReason !== undefined) {
      this.lease.release();
      this.end({ kind: "interrupted" }, [], 0);
    } else {
      this.post(this.lease);
    }
    const result = await this.done;
    signal?.removeEventListener("abort", onAbort);
    return result;
  }

  /** Sends the run to its thread with a new `claim` word, and watches until the thread begins it. */
  private post(lease: WorkerLease): void {
    const claim = new Int32Array(new SharedArrayBuffer(4));
    this.claim = claim;
    lease.post({
      type: "run",
      seq: this.seq,
      code: this.code,
      spec: this.spec,
      deadline: this.deadline,
      stop: this.stopWord.buffer as SharedArrayBuffer,
      claim: claim.buffer as SharedArrayBuffer,
      memoryBytes: this.limits.memory_mb * 1024 * 1024,
      maxValueBytes: this.limits.maxValueBytes,
      maxConsoleBytes: this.limits.maxConsoleBytes,
    });
    this.watchPlacement(lease, claim);
  }

  /**
   * Until the thread begins the run, looks whether a long slice holds that thread (a program
   * beside this one computing) while another thread could take the run; then moves it. The pool
   * places a run only on a thread not held at that moment, but a program may start to compute on
   * it right after, and a run behind it would wait for that program's deadline.
   *
   * Why a timer here: the held thread reads no message, so the worker cannot say it is held, and
   * the pool is not asked again once a run has its room. The thread's shared `busy` word can be
   * read from here at any time without the worker; it tells when the slice running there began,
   * so the next look is when that slice would become long (at most {@link LONG_SLICE_MS} away).
   * A thread that begins the run at once, the usual case, costs one timer. The looks end when the
   * thread begins the run (its `claim` word), the run moves, or it ends.
   */
  private watchPlacement(lease: WorkerLease, claim: Int32Array): void {
    const look = (): void => {
      this.placementTimer = undefined;
      if (this.ended || this.stopReason !== undefined || this.lease !== lease || Atomics.load(claim, 0) !== CLAIM_WAITING) return;
      if (lease.movable()) {
        void this.move(lease, claim);
        return;
      }
      const since = lease.busySince();
      const untilLong = since === 0 ? LONG_SLICE_MS : since + LONG_SLICE_MS + 1 - Date.now();
      this.placementTimer = setTimeout(look, untilLong > 0 ? untilLong : LONG_SLICE_MS);
    };
    look();
  }

  /**
   * Takes the run off a held thread that has not begun it, and posts it where the pool finds room.
   * The `claim` word decides: once withdrawn, the thread drops the run if it ever gets to it; if
   * the thread began it first, it stays. The deadline is the run's own, time spent waiting
   * included.
   */
  private async move(lease: WorkerLease, claim: Int32Array): Promise<void> {
    if (Atomics.compareExchange(claim, 0, CLAIM_WAITING, CLAIM_WITHDRAWN) !== CLAIM_WAITING) return;
    this.logger.debug("program moved off a thread held by another program", { runId: this.runId });
    this.lease = undefined;
    let next: WorkerLease;
    try {
      next = await lease.move(this.waitAbort.signal);
    } catch (err) {
      this.end(this.stopReason === undefined ? { kind: "engine", message: messageOf(err) } : { kind: "interrupted" }, [], 0);
      return;
    }
    this.lease = next;
    if (this.stopReason !== undefined || this.ended) {
      next.release();
      this.end({ kind: "interrupted" }, [], 0);
      return;
    }
    this.post(next);
  }

  private stop(reason: "timeout" | "cancelled"): void {
    if (this.ended || this.stopReason !== undefined) return;
    this.stopReason = reason;
    this.callsAbort.abort(this.stopError());
    for (const start of this.queued.splice(0)) start();
    if (this.lease === undefined) {
      this.waitAbort.abort(this.stopError());
      return;
    }
    if (this.claim !== undefined && Atomics.compareExchange(this.claim, 0, CLAIM_WAITING, CLAIM_WITHDRAWN) === CLAIM_WAITING) {
      // Its thread has not begun it (it may be held by a program beside it): nothing there to stop.
      this.lease.release();
      this.end({ kind: "interrupted" }, [], 0);
      return;
    }
    Atomics.store(this.stopWord, 0, 1);
    this.lease.post({ type: "stop", seq: this.seq });
    const lease = this.lease;
    this.timers.push(
      setTimeout(() => {
        if (this.ended) return;
        this.logger.warn("program worker did not stop in time; ending its thread", { runId: this.runId, graceMs: STOP_GRACE_MS });
        lease.kill();
        this.end({ kind: "interrupted" }, [], 0);
      }, STOP_GRACE_MS),
    );
  }

  private stopError(): AbridgeError {
    return this.stopReason === "cancelled"
      ? new AbridgeError(ErrorCode.CANCELLED, "the run was cancelled")
      : new AbridgeError(ErrorCode.CODE_TIMEOUT, `the program ran past its timeout_ms (${this.limits.timeout_ms} ms)`);
  }

  private onMessage(
    message:
      | { type: "calls"; seq: number; calls: CallRequest[] }
      | { type: "done"; seq: number; outcome: WorkerOutcome; console: ConsoleLine[]; consoleDropped: number },
  ): void {
    if (message.seq !== this.seq || this.ended) return;
    if (message.type === "calls") {
      for (const call of message.calls) this.onCall(call);
    } else {
      this.lease?.release();
      this.end(message.outcome, message.console, message.consoleDropped);
    }
  }

  private onExit(reason: string): void {
    if (this.ended) return;
    this.end(this.stopReason !== undefined ? { kind: "interrupted" } : { kind: "engine", message: reason }, [], 0);
  }

  private settle(settlement: Settlement): void {
    if (this.ended) return;
    this.settlements.push(settlement);
    if (this.settlements.length === 1) {
      // Answers that arrive in one turn of the event loop go to the worker in one message.
      queueMicrotask(() => {
        const settlements = this.settlements;
        this.settlements = [];
        if (!this.ended && settlements.length > 0) this.lease?.post({ type: "settle", seq: this.seq, settlements });
      });
    }
  }

  private onCall(request: CallRequest): void {
    if (this.stopReason !== undefined) {
      const error = this.stopError();
      this.settle({ id: request.id, ok: false, code: error.code, message: `${error.message}: the call of ${request.tool} was not made` });
      return;
    }
    if (this.callCount >= this.limits.max_calls) {
      this.settle({
        id: request.id,
        ok: false,
        code: ErrorCode.CODE_LIMIT,
        message: `the run made its max_calls (${this.limits.max_calls}) calls: the call of ${request.tool} was not made`,
      });
      return;
    }
    this.callCount++;
    const record: CodeCall = { tool: request.tool, ok: false, ms: 0 };
    this.calls.push(record);
    const start = (): void => {
      if (this.stopReason !== undefined || this.ended) {
        const error = this.ended ? new AbridgeError(ErrorCode.CANCELLED, "the program ended") : this.stopError();
        record.code = error.code;
        this.settle({ id: request.id, ok: false, code: error.code, message: `${error.message}: the call of ${request.tool} was not made` });
        return;
      }
      this.active++;
      void this.callHost(request, record).finally(() => {
        this.active--;
        this.queued.shift()?.();
      });
    };
    if (this.active < this.limits.max_concurrent_calls) start();
    else this.queued.push(start);
  }

  private async callHost(request: CallRequest, record: CodeCall): Promise<void> {
    const begun = performance.now();
    try {
      const args = JSON.parse(request.args) as Record<string, unknown>;
      const value = await this.host.callTool(request.tool, args, { signal: this.callsAbort.signal, runId: this.runId });
      record.ms = performance.now() - begun;
      const json = boundedJson(value, this.limits.maxValueBytes);
      if (json.ok) {
        record.ok = true;
        this.settle({ id: request.id, ok: true, json: json.json });
      } else if (json.reason === "too-large") {
        record.code = ErrorCode.CODE_LIMIT;
        this.settle({
          id: request.id,
          ok: false,
          code: ErrorCode.CODE_LIMIT,
          message: `the value of ${request.tool} is over ${this.limits.maxValueBytes} bytes of JSON, more than a value may bring into a program (a quarter of memory_mb)`,
        });
      } else {
        record.code = ErrorCode.INTERNAL;
        this.settle({ id: request.id, ok: false, code: ErrorCode.INTERNAL, message: `the value of ${request.tool} is not JSON: ${json.message}` });
      }
    } catch (err) {
      record.ms = performance.now() - begun;
      const code = typeof (err as { code?: unknown })?.code === "string" ? (err as { code: string }).code : ErrorCode.INTERNAL;
      record.code = code;
      this.settle({ id: request.id, ok: false, code, message: messageOf(err) });
    }
  }

  /** The run is over: its calls are aborted, and the result is made from the worker's outcome. */
  private end(outcome: WorkerOutcome, console: ConsoleLine[], consoleDropped: number): void {
    if (this.ended) return;
    this.ended = true;
    for (const timer of this.timers) clearTimeout(timer);
    if (this.placementTimer !== undefined) clearTimeout(this.placementTimer);
    if (!this.callsAbort.signal.aborted) this.callsAbort.abort(new AbridgeError(ErrorCode.CANCELLED, "the program ended before the call was answered"));
    for (const start of this.queued.splice(0)) start();
    const described = this.describe(outcome);
    this.resolveResult({
      runId: this.runId,
      ok: described.error === undefined,
      console,
      consoleDropped,
      ...described,
      calls: this.calls,
      durationMs: performance.now() - this.started,
    });
  }

  private describe(outcome: WorkerOutcome): { returnJson?: string; error?: CodeRunError } {
    const limits = this.limits;
    switch (outcome.kind) {
      case "none":
        return {};
      case "value":
        return { returnJson: outcome.json };
      case "unserializable":
        return { error: { code: ErrorCode.CODE_ERROR, message: `the return value is not JSON: ${outcome.name}: ${outcome.message}` } };
      case "too-large":
        return {
          error: {
            code: ErrorCode.CODE_LIMIT,
            message: `the return value is ${outcome.bytes} bytes of JSON, over the ${limits.maxValueBytes} a value may have (a quarter of memory_mb)`,
          },
        };
      case "memory":
        return { error: { code: ErrorCode.CODE_MEMORY, message: `the program used more than its memory_mb (${limits.memory_mb} MiB)` } };
      case "stack":
        return { error: { code: ErrorCode.CODE_MEMORY, message: "the program ran out of stack (recursion or nesting too deep)" } };
      case "interrupted": {
        const error =
          this.stopReason === "cancelled"
            ? this.stopError()
            : new AbridgeError(ErrorCode.CODE_TIMEOUT, `the program ran past its timeout_ms (${limits.timeout_ms} ms)`);
        return { error: { code: error.code, message: error.message } };
      }
      case "stuck":
        return { error: { code: ErrorCode.CODE_ERROR, message: "the program waits on a promise nothing will settle (none of its tool calls is in flight)" } };
      case "engine":
        return { error: { code: ErrorCode.INTERNAL, message: `the program runtime failed: ${outcome.message}` } };
      case "syntax": {
        const where = outcome.position === undefined ? "" : ` (${positionText(outcome.position)})`;
        return { error: { code: ErrorCode.CODE_ERROR, message: `${outcome.message}${where}`, ...outcome.position } };
      }
      case "thrown": {
        if (!outcome.error) return { error: { code: ErrorCode.CODE_ERROR, message: `the program threw a value that is not an Error: ${outcome.text}` } };
        const position = outcome.position;
        const where = position === undefined ? "" : ` (${positionText(position)})`;
        if (outcome.name === "SyntaxError" && position !== undefined && /^\s*(import|export)\b/.test(this.code.split("\n")[position.line - 1] ?? "")) {
          const message = "SyntaxError: a program cannot import or export modules; it calls tools through its server globals and tools.call";
          return { error: { code: ErrorCode.CODE_ERROR, message: `${message}${where}`, ...position } };
        }
        const tool = outcome.tool !== undefined ? ` [${outcome.code ?? ErrorCode.INTERNAL}] from ${outcome.tool}` : "";
        return {
          error: {
            code: ErrorCode.CODE_ERROR,
            message: `${outcome.name}: ${outcome.message}${tool}${where}`,
            ...position,
            ...(outcome.tool !== undefined ? { tool: outcome.tool, toolCode: outcome.code ?? ErrorCode.INTERNAL } : {}),
          },
        };
      }
    }
  }
}
