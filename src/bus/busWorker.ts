import os from "node:os";
import { headers, type Msg, type NatsConnection, type Subscription } from "@nats-io/transport-node";
import type { z } from "zod";
import type { Mode } from "../config/schema.js";
import type { Bridge } from "../core/bridge.js";
import { RateLimitedLog } from "../log/rateLimitedLog.js";
import { silentLogger, type Logger } from "../log/logger.js";
import { AbridgeError, ErrorCode } from "../model/errors.js";
import { isObject } from "../model/json.js";
import type { JsonObject } from "../model/types.js";
import {
  agentNameProblem,
  BUS_SUBJECTS,
  busIdSchema,
  checkMessage,
  CONTENT_TRUST,
  CONTENT_TRUST_HEADER,
  invokeRequestSchema,
  metaSubject,
  queueGroup,
  readJson,
  refreshRequestSchema,
  resultSubject,
  type BusError,
  type BusId,
  type DiscoveryMessage,
  type InvokeRequest,
  type InvokeResult,
  type RefreshError,
} from "../wire/busProtocol.js";
import { busError, busErrorOf } from "./busErrors.js";

/** Options of {@link BusWorker}. */
export interface BusWorkerOptions {
  bridge: Bridge;
  connection: NatsConnection;
  agent: string;
  /** The mode tools are listed in and arguments validated in. */
  mode: Mode;
  /** Each call's limit, below the requester's (`timeout` error, retryable, when it passes). */
  callTimeoutMs: number;
  logger?: Logger;
}

/** How long an unsubscribe or a flush may wait for a NATS server that is away, at shutdown. */
const SHUTDOWN_IO_MS = 2_000;

let workerCount = 0;

/**
 * One agent's worker on the bus: a translation of NATS messages onto the {@link Bridge}, as `serve`
 * is of MCP. Calls go through `Bridge.callTool`, so the policy, argument validation, output limits,
 * trust marking and audit apply as on every front end. Every message is read with the schemas of
 * `wire/busProtocol.ts`; a malformed one is answered with a `bad_request` error and the worker goes on.
 */
export class BusWorker {
  /** `host/pid/n`: named in every answer, so a requester can tell the workers of a group apart. */
  readonly id: string;
  private readonly bridge: Bridge;
  private readonly nc: NatsConnection;
  private readonly agent: string;
  private readonly logger: Logger;
  private readonly subscriptions: Subscription[] = [];
  /** Calls and refreshes being handled; shutdown waits for them. */
  private readonly inFlight = new Set<Promise<void>>();
  /** Aborted when the grace of a shutdown is over: calls still running are answered `shutting_down`. */
  private readonly stopping = new AbortController();
  private readonly malformed: RateLimitedLog;
  private stopListening: (() => void) | undefined;
  private lastDigest: string | undefined;
  /** Set once the list was published at start: list changes before that are in that list. */
  private announced = false;
  private closePromise: Promise<void> | undefined;

  constructor(private readonly options: BusWorkerOptions) {
    const problem = agentNameProblem(options.agent);
    if (problem !== undefined) throw new AbridgeError(ErrorCode.INPUT_INVALID, `agent name: ${problem}`);
    this.bridge = options.bridge;
    this.nc = options.connection;
    this.agent = options.agent;
    workerCount += 1;
    this.id = `${os.hostname()}/${process.pid}/${workerCount}`;
    this.logger = (options.logger ?? silentLogger).child({ agent: options.agent });
    // A peer sending garbage without a reply subject must not fill the log.
    this.malformed = new RateLimitedLog(this.logger, "malformed bus message with no reply subject and no readable agent; dropped");
  }

  /**
   * Subscribes (calls in a queue group of the agent's workers, refreshes on their own), then
   * waits up to `startup_grace_ms` for the upstreams and publishes the tool list. Calls that
   * arrive meanwhile wait for the server they need, as on `serve`.
   */
  async start(signal?: AbortSignal): Promise<void> {
    this.subscriptions.push(
      this.nc.subscribe(BUS_SUBJECTS.invoke, { queue: queueGroup(this.agent), callback: (_err, msg) => this.track(this.invoke(msg)) }),
      this.nc.subscribe(BUS_SUBJECTS.refresh, { callback: (_err, msg) => this.track(this.refresh(msg)) }),
    );
    // The server has the subscriptions once this returns: a requester that saw the list can call.
    await this.nc.flush();
    this.stopListening = this.bridge.onListChanged(() => {
      if (this.announced && this.bridge.listDigest(this.options.mode) !== this.lastDigest) this.publishTools("list_changed");
    });
    void this.followReconnects();
    await this.bridge.waitReady(this.bridge.config.startup_grace_ms, signal).catch(() => false);
    // Stopped while upstreams were starting: nothing to announce.
    if (signal?.aborted) return;
    this.announced = true;
    this.publishTools("start");
  }

  /** Publishes the tool list on `tool.meta.mcp.<agent>` (start, refresh, config change, list change, reconnect). */
  publishTools(reason: DiscoveryMessage["reason"]): void {
    const message = this.discovery(reason);
    this.lastDigest = message.digest;
    this.send(metaSubject(this.agent), message, "tool list");
  }

  private discovery(reason: DiscoveryMessage["reason"], id?: BusId): DiscoveryMessage {
    const mode = this.options.mode;
    return {
      agent: this.agent,
      worker: this.id,
      mode,
      reason,
      ...(id !== undefined ? { id } : {}),
      digest: this.bridge.listDigest(mode),
      tools: this.bridge.list(mode),
    };
  }

  /** Subscribers may have missed lists while the server was away: publish again on each return. */
  private async followReconnects(): Promise<void> {
    try {
      for await (const status of this.nc.status()) {
        if (this.closePromise !== undefined) return;
        if (status.type === "reconnect") this.publishTools("reconnect");
      }
    } catch {
      // Ends with the connection.
    }
  }

  private track(task: Promise<void>): void {
    const tracked = task.catch((err: unknown) => this.logger.error("bus message handling failed", { error: String(err) }));
    this.inFlight.add(tracked);
    void tracked.finally(() => this.inFlight.delete(tracked));
  }

  /**
   * Reads a request's body and header. Another agent's message is `undefined` (its own workers
   * answer it); a malformed one is answered here and is `undefined` too.
   */
  private read<T>(msg: Msg, schema: z.ZodType<T>, emptyIs?: unknown): T | undefined {
    const body = msg.data.length === 0 && emptyIs !== undefined ? ({ ok: true, value: emptyIs } as const) : readJson(msg.data);
    if (!body.ok) {
      this.refuse(msg, { id: null, mine: false }, body.problem);
      return undefined;
    }
    const value = body.value;
    const agent = isObject(value) ? value.agent : undefined;
    const valid = typeof agent === "string" && agentNameProblem(agent) === undefined;
    if (valid && agent !== this.agent) return undefined;
    const idField = isObject(value) ? busIdSchema.safeParse(value.id) : undefined;
    const known = { id: idField?.success ? idField.data : null, mine: valid };
    const trust = msg.headers?.get(CONTENT_TRUST_HEADER) ?? "";
    if (trust !== CONTENT_TRUST.request) {
      const got = trust === "" ? "none" : JSON.stringify(trust);
      this.refuse(msg, known, `a request must carry the header ${CONTENT_TRUST_HEADER}: ${CONTENT_TRUST.request} (got ${got})`);
      return undefined;
    }
    const checked = checkMessage(schema, value, "request");
    if (!checked.ok) {
      this.refuse(msg, known, checked.problem);
      return undefined;
    }
    return checked.value;
  }

  /**
   * Answers a malformed request with `bad_request`: to its reply subject, else on
   * `tool.result.<agent>` when it named this agent, else only in the log.
   */
  private refuse(msg: Msg, known: { id: BusId | null; mine: boolean }, problem: string): void {
    const error = busError("bad_request", `malformed message on ${msg.subject}: ${problem}`);
    const answer: InvokeResult | RefreshError = { id: known.id, agent: this.agent, worker: this.id, ok: false, error };
    const reply = replyOf(msg);
    if (reply !== undefined) this.send(reply, answer, "error answer");
    else if (known.mine && msg.subject === BUS_SUBJECTS.invoke) this.send(resultSubject(this.agent), answer, "error answer");
    else this.malformed.warn({ subject: msg.subject, problem });
  }

  private async invoke(msg: Msg): Promise<void> {
    const request = this.read(msg, invokeRequestSchema);
    if (request === undefined) return;
    const answer = await this.call(request);
    const subject = replyOf(msg) ?? resultSubject(this.agent);
    if (!this.send(subject, answer, "result")) {
      // Too large for the NATS server, or the connection is closed: say so if it can be said.
      const error = busError("too_large", `the result of ${request.tool} does not fit in a NATS message (max_payload ${this.nc.info?.max_payload ?? "unknown"} bytes); lower the server's max_output_bytes`);
      this.send(subject, { id: request.id, agent: this.agent, worker: this.id, tool: request.tool, ok: false, error }, "error answer");
    }
  }

  /** Runs one call with the worker's timeout; every outcome is an answer, never a throw. */
  private async call(request: InvokeRequest): Promise<InvokeResult> {
    const common = { id: request.id, agent: this.agent, worker: this.id, tool: request.tool };
    if (this.stopping.signal.aborted) return { ...common, ok: false, error: busError("shutting_down", "the worker is stopping; try another", true) };
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort(new Error("the worker's call timeout passed"));
    }, this.options.callTimeoutMs);
    // A call abandoned at the end of a shutdown's grace is cancelled upstream too, not left running.
    const onStop = (): void => controller.abort(new Error("the worker is stopping"));
    this.stopping.signal.addEventListener("abort", onStop, { once: true });
    try {
      const args = request.arguments as JsonObject | undefined;
      const result = await this.bridge.callTool(request.tool, args, { signal: controller.signal, mode: this.options.mode, client: "bus" });
      return { ...common, ok: true, result };
    } catch (err) {
      let error: BusError;
      if (timedOut) error = busError("timeout", `${request.tool} did not finish within the worker's timeout of ${this.options.callTimeoutMs} ms`, true);
      else if (this.stopping.signal.aborted) error = busError("shutting_down", `the worker stopped before ${request.tool} finished`, true);
      else error = busErrorOf(err);
      return { ...common, ok: false, error };
    } finally {
      clearTimeout(timer);
      this.stopping.signal.removeEventListener("abort", onStop);
    }
  }

  private async refresh(msg: Msg): Promise<void> {
    const request = this.read(msg, refreshRequestSchema, {});
    if (request === undefined) return;
    const reply = replyOf(msg);
    if (request.relist !== false) {
      try {
        await this.bridge.refresh();
      } catch (err) {
        const answer: RefreshError = { id: request.id ?? null, agent: this.agent, worker: this.id, ok: false, error: busErrorOf(err) };
        if (reply !== undefined) this.send(reply, answer, "error answer");
        this.logger.warn("re-listing the upstreams failed", { error: answer.error.message });
        return;
      }
    }
    const message = this.discovery("refresh", request.id);
    // Everyone hears of a re-list; a request that only asked for the list as it is gets it alone.
    if (request.relist !== false || reply === undefined) {
      this.lastDigest = message.digest;
      this.send(metaSubject(this.agent), message, "tool list");
    }
    if (reply !== undefined) this.send(reply, message, "tool list");
  }

  /** Publishes JSON marked untrusted. False when it could not be sent (too large, connection closed). */
  private send(subject: string, body: unknown, what: string): boolean {
    const marked = headers();
    marked.set(CONTENT_TRUST_HEADER, CONTENT_TRUST.output);
    marked.set("Content-Type", "application/json");
    try {
      this.nc.publish(subject, JSON.stringify(body), { headers: marked });
      return true;
    } catch (err) {
      this.logger.error(`could not publish the ${what}`, { subject, error: err instanceof Error ? err.message : String(err) });
      return false;
    }
  }

  /** How many calls and refreshes are being handled now. */
  get pending(): number {
    return this.inFlight.size;
  }

  /**
   * Stops taking messages (the subscriptions are drained: what already arrived is handled), gives
   * the calls in flight `graceMs` to finish, answers those still running with `shutting_down`
   * (cancelling them upstream), and flushes the answers. Leaves the connection and the bridge to
   * their owner. Idempotent.
   */
  close(graceMs: number): Promise<void> {
    this.closePromise ??= (async () => {
      this.stopListening?.();
      await Promise.allSettled(this.subscriptions.map((s) => within(s.drain(), SHUTDOWN_IO_MS)));
      for (const subscription of this.subscriptions) if (!subscription.isClosed()) subscription.unsubscribe();
      const settled = Promise.allSettled([...this.inFlight]);
      if (!(await within(settled, graceMs))) {
        this.logger.warn("calls still running after the shutdown grace; answering them with shutting_down", { calls: this.inFlight.size });
        this.stopping.abort();
        await Promise.allSettled([...this.inFlight]);
      }
      if (!this.nc.isClosed()) await within(this.nc.flush(), SHUTDOWN_IO_MS);
    })();
    return this.closePromise;
  }
}

/** The reply subject of a message; the client gives "" for a message sent without one. */
function replyOf(msg: Msg): string | undefined {
  return msg.reply === undefined || msg.reply === "" ? undefined : msg.reply;
}

/** True when `promise` settled within `ms`; its timer does not outlive it. */
async function within(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([promise.then(() => true, () => true), late]);
  } finally {
    clearTimeout(timer);
  }
}
