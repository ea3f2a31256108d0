/**
 * A tool call over the bus (`tool.invoke.mcp.<agent>`), run on the Bridge within what is left of
 * the worker's call timeout. Kept apart from `busWorker.ts`, which receives, queues and answers
 * calls, as `runRequest.ts` is for programs: this module turns one call into one answer, with a
 * timeout, a shutdown or an upstream failure each named as the bus error a requester can act on.
 */
import type { Mode } from "../../config/schema.js";
import type { Bridge } from "../../core/bridge.js";
import type { JsonObject } from "../../model/types.js";
import type { BusError, InvokeRequest, InvokeResult } from "../wire/busProtocol.js";
import { busError, busErrorOf } from "./busErrors.js";

/** What a call needs of its worker. */
export interface InvokeContext {
  bridge: Bridge;
  agent: string;
  /** The worker's id, named in the answer. */
  worker: string;
  /** The mode arguments are validated in. */
  mode: Mode;
  /** Aborted when a shutdown's grace is over: a call still running is cancelled and answered `shutting_down`. */
  stopping: AbortSignal;
}

/**
 * Runs one call within what is left of the worker's timeout (`leftMs` of `timeoutMs`, the rest
 * spent waiting in the queue); every outcome is an answer, never a throw.
 */
export async function answerInvoke(context: InvokeContext, request: InvokeRequest, timeoutMs: number, leftMs: number): Promise<InvokeResult> {
  const common = { id: request.id, agent: context.agent, worker: context.worker, tool: request.tool };
  if (context.stopping.aborted) return { ...common, ok: false, error: busError("shutting_down", "the worker is stopping; try another", true) };
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(
    () => {
      timedOut = true;
      controller.abort(new Error("the worker's call timeout passed"));
    },
    Math.max(0, leftMs),
  );
  // A call abandoned at the end of a shutdown's grace is cancelled upstream too, not left running.
  const onStop = (): void => controller.abort(new Error("the worker is stopping"));
  context.stopping.addEventListener("abort", onStop, { once: true });
  try {
    const args = request.arguments as JsonObject | undefined;
    const result = await context.bridge.callTool(request.tool, args, { signal: controller.signal, mode: context.mode, client: "bus" });
    return { ...common, ok: true, result };
  } catch (err) {
    let error: BusError;
    if (timedOut) {
      const waited = Math.round(timeoutMs - leftMs);
      error = busError(
        "timeout",
        `${request.tool} did not finish within the worker's timeout of ${Math.round(timeoutMs)} ms${waited >= 1 ? ` (${waited} ms of it waiting in the queue)` : ""}`,
        true,
      );
    } else if (context.stopping.aborted) error = busError("shutting_down", `the worker stopped before ${request.tool} finished`, true);
    else error = busErrorOf(err);
    return { ...common, ok: false, error };
  } finally {
    clearTimeout(timer);
    context.stopping.removeEventListener("abort", onStop);
  }
}
