/**
 * A program run over the bus (`tool.run.mcp.<agent>`): code mode's `run_code` for a requester on
 * NATS. The worker queues a run like a call (it takes one of `bus_max_concurrent`'s slots while it
 * runs); the run's time counts from its arrival, so time spent waiting in the queue comes off its
 * `timeout_ms` and the answer comes within it either way. Every call the program makes takes the
 * Bridge's way, as a call over the bus does.
 */
import type { Bridge } from "../../core/bridge.js";
import { AbridgeError, ErrorCode } from "../../model/errors.js";
import type { BusError, RunRequest, RunResultMessage } from "../wire/busProtocol.js";
import { wireRun } from "../../daemon/wire/protocol.js";
import { busError, busErrorOf } from "./busErrors.js";

/** What a run needs of its worker. */
export interface RunContext {
  bridge: Bridge;
  agent: string;
  /** The worker's id, named in the answer. */
  worker: string;
  /** Aborted when a shutdown's grace is over: a run still going is ended and answered `shutting_down`. */
  stopping: AbortSignal;
  /** Most bytes of the run's JSON in the answer (half the NATS server's max_payload): past it its console and return value are left out. */
  maxRunBytes: number;
}

/** How long a run may take from its arrival: its own `timeout_ms`, else the config's `[code]` one. */
export function runTimeoutMs(bridge: Bridge, request: RunRequest): number {
  return request.limits?.timeout_ms ?? bridge.config.code.timeout_ms;
}

/**
 * The bus error of a run that ran and failed: a program's own failure is `code_error`, its time
 * `timeout`, a limit it passed (`max_calls`, memory, its size) `too_large`; the run's code is beside it.
 */
function runFailure(error: { code: string; message: string }): BusError {
  const known = (Object.values(ErrorCode) as string[]).includes(error.code) ? (error.code as ErrorCode) : ErrorCode.INTERNAL;
  return busErrorOf(new AbridgeError(known, error.message));
}

/**
 * Runs `request`'s program with `leftMs` of its time left; every outcome is an answer, never a
 * throw. A program that failed is answered `ok: false` with its run and answer kept beside the error.
 */
export async function answerRun(context: RunContext, request: RunRequest, leftMs: number): Promise<RunResultMessage> {
  const common = { id: request.id, agent: context.agent, worker: context.worker };
  if (context.stopping.aborted) return { ...common, ok: false, error: busError("shutting_down", "the worker is stopping; try another", true) };
  try {
    const limits = { ...request.limits, timeout_ms: Math.max(1, Math.floor(leftMs)) };
    const { result, answer } = await context.bridge.runCode(request.code, { limits, signal: context.stopping, client: "bus" });
    const run = wireRun(result, context.maxRunBytes);
    if (result.ok) return { ...common, ok: true, run, answer };
    const error = context.stopping.aborted
      ? busError("shutting_down", "the worker stopped before the program finished", true)
      : runFailure(result.error ?? { code: ErrorCode.INTERNAL, message: "the run failed" });
    return { ...common, ok: false, error, run, answer };
  } catch (err) {
    // Only what the caller got wrong is thrown by runCode (a limit the schema let through).
    return { ...common, ok: false, error: busErrorOf(err) };
  }
}
