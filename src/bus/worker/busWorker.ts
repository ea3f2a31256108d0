import os from "node:os";
import { headers, PermissionViolationError, type Msg, type NatsConnection, type Subscription } from "@nats-io/transport-node";
import type { Mode } from "../../config/schema.js";
import type { Bridge } from "../../core/bridge.js";
import { RateLimitedLog } from "../../log/rateLimitedLog.js";
import { silentLogger, type Logger } from "../../log/logger.js";
import { AbridgeError, ErrorCode, messageOf } from "../../model/errors.js";
import {
  agentNameProblem,
  BUS_SUBJECTS,
  CONTENT_TRUST,
  CONTENT_TRUST_HEADER,
  invokeRequestSchema,
  invokeSubject,
  metaSubject,
  queueGroup,
  refreshRequestSchema,
  refreshSubject,
  resultSubject,
  runRequestSchema,
  runSubject,
  type BusError,
  type BusId,
  type DiscoveryMessage,
  type InvokeRequest,
  type InvokeResult,
  type RunRequest,
  type RunResultMessage,
} from "../wire/busProtocol.js";
import { busError } from "./busErrors.js";
import { CallQueue } from "./callQueue.js";
import { answerInvoke } from "./invokeRequest.js";
import { RefreshRuns } from "./refreshRuns.js";
import { readRequest, replyOf, type RequestReaderContext, requesterOf } from "./requestReader.js";
import { answerRun, runTimeoutMs } from "./runRequest.js";

/** Options of {@link BusWorker}. */
export interface BusWorkerOptions {
  bridge: Bridge;
  connection: NatsConnection;
  agent: string;
  /** The mode tools are listed in and arguments validated in. */
  mode: Mode;
  /**
   * Each call's limit, below the requester's (`timeout` error, retryable, when it passes). Time a
   * call waits in the worker's queue counts: the answer comes within it either way.
   */
  callTimeoutMs: number;
  /** Calls running at once (default {@link DEFAULT_MAX_CONCURRENT}); past it calls wait in the queue. */
  maxConcurrent?: number;
  /** Calls waiting at once (default {@link DEFAULT_MAX_QUEUED}); past it a call is answered `busy`. */
  maxQueued?: number;
  /** At most one re-list and publish of the tool list for refresh requests per this many ms (default {@link DEFAULT_REFRESH_INTERVAL_MS}). */
  refreshIntervalMs?: number;
  logger?: Logger;
}

export const DEFAULT_MAX_CONCURRENT = 64;
export const DEFAULT_MAX_QUEUED = 256;
export const DEFAULT_REFRESH_INTERVAL_MS = 1_000;

/** How long an unsubscribe or a flush may wait for a NATS server that is away, at shutdown. */
const SHUTDOWN_IO_MS = 2_000;

/** A call (or a program to run) taken from the bus, running or waiting for a slot. */
interface CallJob {
  msg: Msg;
  request: InvokeRequest | RunRequest;
  /** When its answer is due (performance.now): arrival plus the worker's call timeout (a run's own timeout). */
  deadline: number;
  arrived: number;
}

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
  /** Calls and refreshes being handled; shutdown waits for them (and for the calls waiting in {@link calls}). */
  private readonly inFlight = new Set<Promise<void>>();
  /** Calls running and waiting, fairly among requesters. */
  private readonly calls: CallQueue<CallJob>;
  private readonly busyLog: RateLimitedLog;
  private busy: BusError | undefined;
  /** Refresh requests waiting for the next re-list and publish. */
  private readonly refreshes: RefreshRuns;
  /** The headers of everything the worker sends (only read by the client: one instance serves every message). */
  private readonly outputHeaders = headers();
  /** The tool list as JSON, made once per list (a list is published and answered many times). */
  private toolsJson: { digest: string; json: string } | undefined;
  /** Aborted when the grace of a shutdown is over: calls still running are answered `shutting_down`. */
  private readonly stopping = new AbortController();
  /** What reading a request needs: malformed ones are answered, or logged rate-limited. */
  private readonly reader: RequestReaderContext;
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
    this.reader = {
      agent: this.agent,
      worker: this.id,
      send: (subject, body, what) => this.send(subject, body, what),
      malformed: new RateLimitedLog(this.logger, "malformed bus message with no reply subject and no readable agent; dropped"),
    };
    this.calls = new CallQueue({ maxConcurrent: options.maxConcurrent ?? DEFAULT_MAX_CONCURRENT, maxQueued: options.maxQueued ?? DEFAULT_MAX_QUEUED });
    this.busyLog = new RateLimitedLog(this.logger, "at the limit of calls running and waiting; answering busy");
    this.refreshes = new RefreshRuns({
      agent: this.agent,
      worker: this.id,
      intervalMs: options.refreshIntervalMs ?? DEFAULT_REFRESH_INTERVAL_MS,
      logger: this.logger,
      busyLog: this.busyLog,
      relist: () => this.bridge.refresh(),
      publish: (id) => this.publishTools("refresh", id),
      answerList: (reply, id) => this.sendJson(reply, this.discovery("refresh", id).json, "tool list"),
      send: (subject, body, what) => this.send(subject, body, what),
      track: (task) => this.track(task),
      closing: () => this.closePromise !== undefined,
    });
    this.outputHeaders.set(CONTENT_TRUST_HEADER, CONTENT_TRUST.output);
    this.outputHeaders.set("Content-Type", "application/json");
  }

  /**
   * Subscribes (calls in a queue group of the agent's workers, refreshes on their own; on the
   * agent's own subjects and on the shared ones), then waits up to `startup_grace_ms` for the
   * upstreams and publishes the tool list. Calls that arrive meanwhile wait for the server they
   * need, as on `serve`.
   *
   * Messages are taken from the connection as they come and never left to pile up in it: a call
   * is started, queued or answered `busy` at once, so the NATS server never sees this worker
   * fall behind (a slow consumer it would cut off). The client has no buffer of its own for a
   * subscription with a callback; the worker's queue ({@link BusWorkerOptions.maxQueued}) is the
   * only one, and it is bounded.
   *
   * @throws AbridgeError BUS_UNAVAILABLE when the NATS server does not let it subscribe to the agent's own subjects.
   */
  async start(signal?: AbortSignal): Promise<void> {
    const group = queueGroup(this.agent);
    const refused: { subject: string; error: Error }[] = [];
    const subscribe = (subject: string, handle: (msg: Msg) => void, queue?: string): Subscription =>
      this.nc.subscribe(subject, {
        ...(queue !== undefined ? { queue } : {}),
        callback: (err, msg) => {
          if (err !== null) {
            if (err instanceof PermissionViolationError) refused.push({ subject, error: err });
            else this.logger.error("bus subscription failed", { subject, error: err.message });
            return;
          }
          try {
            handle(msg);
          } catch (thrown) {
            this.logger.error("bus message handling failed", { subject, error: String(thrown) });
          }
        },
      });
    this.subscriptions.push(
      subscribe(invokeSubject(this.agent), (msg) => this.onInvoke(msg, true), group),
      subscribe(refreshSubject(this.agent), (msg) => this.onRefresh(msg, true)),
      subscribe(BUS_SUBJECTS.invoke, (msg) => this.onInvoke(msg, false), group),
      subscribe(BUS_SUBJECTS.refresh, (msg) => this.onRefresh(msg, false)),
      subscribe(runSubject(this.agent), (msg) => this.onRun(msg), group),
    );
    // The server has the subscriptions once this returns (a requester that saw the list can
    // call), and has refused those its permissions do not allow.
    await this.nc.flush();
    const own = refused.filter((r) => r.subject === invokeSubject(this.agent) || r.subject === refreshSubject(this.agent));
    if (own.length > 0) {
      throw new AbridgeError(
        ErrorCode.BUS_UNAVAILABLE,
        `the NATS server does not let this worker subscribe to ${own.map((r) => r.subject).join(" and ")}: allow the agent's subjects in its permissions (${own[0]!.error.message})`,
      );
    }
    if (refused.length > 0) {
      this.logger.info(
        "the NATS server does not let this worker subscribe to some subjects (the shared ones, or the agent's run subject); serving the others",
        {
          refused: refused.map((r) => r.subject).join(", "),
          serving: `${invokeSubject(this.agent)}, ${refreshSubject(this.agent)}`,
        },
      );
    }
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
  publishTools(reason: DiscoveryMessage["reason"], id?: BusId): void {
    const message = this.discovery(reason, id);
    this.lastDigest = message.digest;
    this.sendJson(metaSubject(this.agent), message.json, "tool list");
  }

  /** A {@link DiscoveryMessage} as JSON; the tools' JSON is made once per list and reused. */
  private discovery(reason: DiscoveryMessage["reason"], id?: BusId): { digest: string; json: string } {
    const mode = this.options.mode;
    const digest = this.bridge.listDigest(mode);
    if (this.toolsJson?.digest !== digest) this.toolsJson = { digest, json: JSON.stringify(this.bridge.list(mode)) };
    const head: Omit<DiscoveryMessage, "tools"> = { agent: this.agent, worker: this.id, mode, reason, ...(id !== undefined ? { id } : {}), digest };
    return { digest, json: `${JSON.stringify(head).slice(0, -1)},"tools":${this.toolsJson.json}}` };
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
   * A call arrived: read it, then start it, queue it, or answer `busy` (it, or a waiting call of
   * a requester that holds more of the queue), all before the next message is read.
   */
  private onInvoke(msg: Msg, ownSubject: boolean): void {
    const request = readRequest(this.reader, msg, invokeRequestSchema, ownSubject);
    if (request === undefined) return;
    const arrived = performance.now();
    this.admit({ msg, request, arrived, deadline: arrived + this.options.callTimeoutMs });
  }

  /** Starts a job, queues it, or answers `busy` (it, or a waiting job of a requester that holds more of the queue). */
  private admit(job: CallJob): void {
    const key = requesterOf(job.msg);
    const admission = this.calls.offer(key, job);
    if (admission.start) this.startCall(key, job);
    if (admission.refused !== undefined) {
      this.busyLog.warn({ running: this.calls.running, waiting: this.calls.waiting });
      this.answer(admission.refused, { ok: false, error: this.busyError() });
    }
  }

  /**
   * A program to run arrived (`tool.run.mcp.<agent>`): queued with the calls, in the same slots,
   * and due within its own `timeout_ms` from now (see runRequest.ts).
   */
  private onRun(msg: Msg): void {
    const request = readRequest(this.reader, msg, runRequestSchema, true);
    if (request === undefined) return;
    const arrived = performance.now();
    this.admit({ msg, request, arrived, deadline: arrived + runTimeoutMs(this.bridge, request) });
  }

  /** The answer to a call refused at the limits (the same every time: made once). */
  private busyError(): BusError {
    this.busy ??= busError(
      "busy",
      `worker ${this.id} is at its limit (${this.calls.maxConcurrent} calls running, ${this.calls.maxQueued} waiting); the call was not run: try again, another worker of the agent may take it`,
      true,
    );
    return this.busy;
  }

  private startCall(key: string, job: CallJob): void {
    const task = this.runCall(job).finally(() => {
      this.calls.done(key);
      this.startWaiting();
    });
    this.track(task);
  }

  /** Starts the waiting calls that may start now; those whose time passed while they waited are answered `busy`. */
  private startWaiting(): void {
    for (let next = this.calls.next(); next !== undefined; next = this.calls.next()) {
      const { key, item } = next;
      const now = performance.now();
      if (this.stopping.signal.aborted) {
        this.calls.done(key);
        this.answer(item, { ok: false, error: busError("shutting_down", "the worker is stopping; try another", true) });
      } else if (now >= item.deadline) {
        this.calls.done(key);
        const waited = Math.round(now - item.arrived);
        this.answer(item, {
          ok: false,
          error: busError("busy", `the call waited ${waited} ms in worker ${this.id}'s queue, its whole timeout, and was not run: try again`, true),
        });
      } else {
        this.startCall(key, item);
      }
    }
  }

  private async runCall(job: CallJob): Promise<void> {
    const { request } = job;
    const answer: InvokeResult | RunResultMessage =
      "code" in request
        ? await answerRun(
            {
              bridge: this.bridge,
              agent: this.agent,
              worker: this.id,
              stopping: this.stopping.signal,
              maxRunBytes: (this.nc.info?.max_payload ?? 1_048_576) / 2,
            },
            request,
            job.deadline - performance.now(),
          )
        : await answerInvoke(
            { bridge: this.bridge, agent: this.agent, worker: this.id, mode: this.options.mode, stopping: this.stopping.signal },
            request,
            job.deadline - job.arrived,
            job.deadline - performance.now(),
          );
    const subject = replyOf(job.msg) ?? resultSubject(this.agent);
    if (!this.send(subject, answer, "result")) {
      // Too large for the NATS server, or the connection is closed: say so if it can be said.
      const what = "code" in request ? "the program's answer" : `the result of ${request.tool}`;
      const error = busError(
        "too_large",
        `${what} does not fit in a NATS message (max_payload ${this.nc.info?.max_payload ?? "unknown"} bytes); lower the server's max_output_bytes`,
      );
      this.answer(job, { ok: false, error });
    }
  }

  /** Sends an answer to a call: to its reply subject, else on `tool.result.<agent>`. */
  private answer(job: CallJob, outcome: { ok: false; error: BusError }): void {
    const subject = replyOf(job.msg) ?? resultSubject(this.agent);
    const tool = "tool" in job.request ? { tool: job.request.tool } : {};
    this.send(subject, { id: job.request.id, agent: this.agent, worker: this.id, ...tool, ...outcome }, "error answer");
  }

  /**
   * A refresh request arrived. One that asks only for the list as it is (`relist: false`) with
   * a reply subject is answered at once; the others wait for the next refresh run ({@link RefreshRuns}).
   */
  private onRefresh(msg: Msg, ownSubject: boolean): void {
    const request = readRequest(this.reader, msg, refreshRequestSchema, ownSubject, {});
    if (request === undefined) return;
    const reply = replyOf(msg);
    if (request.relist === false && reply !== undefined) {
      this.sendJson(reply, this.discovery("refresh", request.id).json, "tool list");
      return;
    }
    this.refreshes.request(request.id, request.relist !== false, reply);
  }

  /** Publishes JSON marked untrusted. False when it could not be sent (too large, connection closed). */
  private send(subject: string, body: unknown, what: string): boolean {
    return this.sendJson(subject, JSON.stringify(body), what);
  }

  private sendJson(subject: string, json: string, what: string): boolean {
    try {
      this.nc.publish(subject, json, { headers: this.outputHeaders });
      return true;
    } catch (err) {
      this.logger.error(`could not publish the ${what}`, { subject, error: messageOf(err) });
      return false;
    }
  }

  /** How many calls and refreshes are being handled or waiting now. */
  get pending(): number {
    return this.inFlight.size + this.calls.waiting;
  }

  /** Resolves once no call runs or waits and no refresh is being handled or waiting. */
  private async idle(): Promise<void> {
    while (this.inFlight.size > 0 || this.calls.waiting > 0 || this.refreshes.waiting) {
      // A refresh held back by the interval runs now: its requesters are answered before the end.
      this.refreshes.schedule(true);
      this.startWaiting();
      if (this.inFlight.size === 0) return;
      await Promise.allSettled([...this.inFlight]);
    }
  }

  /**
   * Stops taking messages (the subscriptions are drained: what already arrived is handled), gives
   * the calls running and waiting `graceMs` to finish, answers those still running or waiting with
   * `shutting_down` (cancelling them upstream), and flushes the answers. Leaves the connection and
   * the bridge to their owner. Idempotent.
   */
  close(graceMs: number): Promise<void> {
    this.closePromise ??= (async () => {
      this.stopListening?.();
      await Promise.allSettled(this.subscriptions.map((s) => within(s.drain(), SHUTDOWN_IO_MS)));
      for (const subscription of this.subscriptions) if (!subscription.isClosed()) subscription.unsubscribe();
      if (!(await within(this.idle(), graceMs))) {
        this.logger.warn("calls still running after the shutdown grace; answering them with shutting_down", {
          calls: this.calls.running,
          waiting: this.calls.waiting,
        });
        this.stopping.abort();
        for (const job of this.calls.takeWaiting())
          this.answer(job, { ok: false, error: busError("shutting_down", "the worker stopped before the call started; try another", true) });
        await this.idle();
      }
      if (!this.nc.isClosed()) await within(this.nc.flush(), SHUTDOWN_IO_MS);
    })();
    return this.closePromise;
  }
}

/** True when `promise` settled within `ms`; its timer does not outlive it. */
async function within(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([
      promise.then(
        () => true,
        () => true,
      ),
      late,
    ]);
  } finally {
    clearTimeout(timer);
  }
}
