import { ErrorCode as RpcErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";

/**
 * When one forwarded request is given up, and who is told: abridge's own clock (an idle timeout,
 * restarted by progress when asked, and a total bound), and the caller's abort.
 *
 * abridge keeps its own clock instead of the SDK's: the SDK reports its timeout as an McpError
 * with code -32001, the same code an upstream may send in its own error response (a quota, a
 * gateway), so only the identity of {@link timedOut} tells "we gave up" from "it answered
 * -32001"; it is made when the timer fires, not per request (an Error captures a stack trace).
 *
 * Giving up cancels a direct request itself ({@link cancelDirect}), and aborts a private
 * controller that a request through the SDK client listens to ({@link signal}, made only when
 * such a request asks for it): the SDK never removes its abort listener, so handing it a
 * long-lived caller signal would pile up listeners. Either way notifications/cancelled goes
 * upstream, so an abandoned call does not keep the server busy.
 *
 * One object per request, its own abort listener (`handleEvent`) and its timers' argument: every
 * request used to make five closures over one large context for this.
 */
export class CallClock {
  /** The clock's own reason, once the timeout has fired. */
  timedOut: McpError | undefined;
  /** Cancels the direct request under way, if any. */
  cancelDirect: ((reason: unknown) => void) | undefined;
  private controller: AbortController | undefined;
  private gaveUp: { reason: unknown } | undefined;
  private idleTimer: NodeJS.Timeout | undefined;
  private totalTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly timeoutMs: number,
    private readonly callerSignal: AbortSignal | undefined,
    maxTotalTimeoutMs?: number,
  ) {
    callerSignal?.addEventListener("abort", this, { once: true });
    this.arm();
    if (maxTotalTimeoutMs !== undefined) {
      this.totalTimer = setTimeout(timeOut, maxTotalTimeoutMs, this);
      this.totalTimer.unref();
    }
  }

  /** (Re)starts the idle timeout: at the start, and on progress when the call asks for it. */
  arm(): void {
    if (this.idleTimer !== undefined) clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(timeOut, this.timeoutMs, this);
    this.idleTimer.unref();
  }

  /** The caller aborted (this object is its abort listener). */
  handleEvent(): void {
    this.giveUp(this.callerSignal?.reason);
  }

  /** The timeout fired. */
  expire(): void {
    this.giveUp((this.timedOut ??= new McpError(RpcErrorCode.RequestTimeout, `no answer within ${this.timeoutMs} ms`)));
  }

  /** A signal for a request through the SDK client: aborted already when the call was given up. */
  signal(): AbortSignal {
    this.controller ??= new AbortController();
    if (this.gaveUp !== undefined) this.controller.abort(this.gaveUp.reason);
    return this.controller.signal;
  }

  /** Stops the timers and the abort listener: the request is over. */
  stop(): void {
    if (this.idleTimer !== undefined) clearTimeout(this.idleTimer);
    if (this.totalTimer !== undefined) clearTimeout(this.totalTimer);
    this.callerSignal?.removeEventListener("abort", this);
  }

  private giveUp(reason: unknown): void {
    this.gaveUp ??= { reason };
    this.cancelDirect?.(reason);
    this.controller?.abort(reason);
  }
}

/** The timers' callback: one function for every clock, which it is handed as the argument. */
function timeOut(clock: CallClock): void {
  clock.expire();
}
