import { randomUUID } from "node:crypto";
import { headers, NoRespondersError, PermissionViolationError, RequestError, TimeoutError, type Msg, type NatsConnection } from "@nats-io/transport-node";
import { silentLogger, type Logger } from "../../log/logger.js";
import { AbridgeError, ErrorCode, messageOf } from "../../model/errors.js";
import type { CallToolResult, JsonObject } from "../../model/types.js";
import type { RunCodeAnswer, RunCodeOptions } from "../../core/bridge.js";
import {
  agentNameProblem,
  BUS_SUBJECTS,
  checkMessage,
  CONTENT_TRUST,
  CONTENT_TRUST_HEADER,
  DEFAULT_REQUEST_TIMEOUT_MS,
  discoveryMessageSchema,
  invokeResultSchema,
  invokeSubject,
  readJson,
  refreshErrorSchema,
  refreshSubject,
  runResultMessageSchema,
  runSubject,
  type BusErrorCode,
  type BusId,
  type DiscoveryMessage,
} from "../wire/busProtocol.js";
import { connectNats, parseNatsUrl, type NatsSecurity } from "../wire/natsConnection.js";

/** A worker's tool list as {@link BusClient.listTools} returns it. */
export type BusDiscovery = DiscoveryMessage;

/**
 * A call over the bus that ended in a typed bus error: the worker's (its timeout, an unknown tool,
 * a malformed request...) or the client's own (its timeout passed, no worker subscribed).
 * `busCode` is the bus code, `retryable` whether another try (perhaps on another worker) may work.
 */
export class BusCallError extends AbridgeError {
  readonly busCode: BusErrorCode;
  /** `worker`: a worker answered with this error; `client`: no answer came (timeout, no responders). */
  readonly origin: "worker" | "client";
  /** The worker that answered, when one did. */
  readonly worker: string | undefined;

  constructor(busCode: BusErrorCode, message: string, options: { retryable: boolean; origin: "worker" | "client"; worker?: string; cause?: unknown }) {
    super(ErrorCode.BUS_CALL_FAILED, message, { retryable: options.retryable, ...(options.cause !== undefined ? { cause: options.cause } : {}) });
    this.name = "BusCallError";
    this.busCode = busCode;
    this.origin = options.origin;
    this.worker = options.worker;
  }
}

/**
 * Options of {@link BusClient.connect}. Credentials: `nats://USER:PASSWORD@HOST` or
 * `nats://TOKEN@HOST` in the URL, or `credsFile`, or `nkeyFile` (one of them); TLS with `tls`
 * (or a `tls://` URL); `inboxPrefix` for a user whose permissions allow only its own inbox.
 */
export interface BusClientOptions extends NatsSecurity {
  /** The NATS server, `nats://HOST:PORT` (`tls://` requires TLS). */
  nats: string;
  /** The requester's timeout of each call (default 60 s: above the worker's 30 s, so its typed `timeout` arrives first). */
  timeoutMs?: number;
  /** The connection's name as the NATS server shows it (default `abridge-bus-client`). */
  name?: string;
  /**
   * Send on the shared subjects `tool.invoke.mcp` and `tool.meta.mcp.refresh`, naming the agent
   * only in the body, as workers that predate the per-agent subjects need. Default false: the
   * agent's own subjects, which permissions can keep from every other agent.
   */
  sharedSubjects?: boolean;
  logger?: Logger;
}

/** Options of one {@link BusClient.callTool}. */
export interface BusCallOptions {
  /** This call's own timeout (default the client's). */
  timeoutMs?: number;
  /** Stops waiting (CANCELLED); the worker is not told. */
  signal?: AbortSignal;
  /** The request id (default a random UUID). */
  id?: BusId;
}

/** Options of one {@link BusClient.runCode}. */
export interface BusRunOptions extends BusCallOptions {
  /** Limits of this run, each over the worker's config `[code]` value. */
  limits?: RunCodeOptions["limits"];
}

/** Options of {@link BusClient.listTools}. */
export interface BusListOptions {
  /** Ask the workers to re-list their upstreams first (each worker of the agent re-lists and publishes; refreshes close together share one re-list). Default false: the list as the worker has it. */
  refresh?: boolean;
  timeoutMs?: number;
  signal?: AbortSignal;
}

/**
 * The host side of the bus: lists an agent's tools and calls them, as NATS requests on the
 * subjects of `wire/busProtocol.ts`, each marked `Content-Trust: tool-request`. Answers are
 * checked against the protocol's schemas; a bus error is thrown as a {@link BusCallError}.
 */
export class BusClient {
  private closePromise: Promise<void> | undefined;

  private constructor(
    private readonly nc: NatsConnection,
    private readonly timeoutMs: number,
    private readonly sharedSubjects: boolean,
  ) {}

  /**
   * Connects to the NATS server.
   *
   * @throws AbridgeError INPUT_INVALID for a URL that is not `nats://HOST:PORT`, or credentials
   * that cannot be used (two at once, an unreadable file); BUS_UNAVAILABLE when the server cannot
   * be reached, or refuses the credentials (then not retryable).
   */
  static async connect(options: BusClientOptions): Promise<BusClient> {
    const url = parseNatsUrl(options.nats);
    if ("problem" in url) throw new AbridgeError(ErrorCode.INPUT_INVALID, `NATS URL: ${url.problem}`);
    const timeoutMs = options.timeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    if (!Number.isFinite(timeoutMs) || timeoutMs <= 0)
      throw new AbridgeError(ErrorCode.INPUT_INVALID, `timeoutMs: expected a positive number, got ${timeoutMs}`);
    const security: NatsSecurity = {
      ...(options.credsFile !== undefined ? { credsFile: options.credsFile } : {}),
      ...(options.nkeyFile !== undefined ? { nkeyFile: options.nkeyFile } : {}),
      ...(options.tls !== undefined ? { tls: options.tls } : {}),
      ...(options.inboxPrefix !== undefined ? { inboxPrefix: options.inboxPrefix } : {}),
    };
    const nc = await connectNats({ url, security, name: options.name ?? "abridge-bus-client", logger: options.logger ?? silentLogger });
    return new BusClient(nc, timeoutMs, options.sharedSubjects === true);
  }

  /**
   * The tool list of `agent`'s workers (the first worker to answer), in the worker's mode.
   *
   * @throws BusCallError `unavailable` at once when no worker of the agent is on the bus, `busy`
   * when the worker has too many refreshes waiting, `refused` when the permissions do not allow
   * the request (see {@link callTool}); AbridgeError INPUT_INVALID for a bad agent name.
   */
  async listTools(agent: string, options: BusListOptions = {}): Promise<BusDiscovery> {
    checkAgent(agent);
    const id = randomUUID();
    const subject = this.sharedSubjects ? BUS_SUBJECTS.refresh : refreshSubject(agent);
    const msg = await this.request(subject, agent, { agent, id, relist: options.refresh ?? false }, options.timeoutMs, options.signal);
    const body = this.answerBody(msg);
    const failed = refreshErrorSchema.safeParse(body);
    if (failed.success) throw workerError(failed.data.error, failed.data.worker);
    const checked = checkMessage(discoveryMessageSchema, body, "answer");
    if (!checked.ok) throw malformedAnswer(checked.problem);
    return checked.value;
  }

  /**
   * Calls `tool` of `agent` with `args` and returns its result; a tool error is a result with
   * `isError: true`, as on MCP.
   *
   * @throws BusCallError for a bus error: the worker's (`tool_not_found`, `timeout`, `busy`,
   * `bad_request`...) or this client's: `unavailable` at once when no worker of the agent listens
   * on its subject (the NATS server's no-responders status), `timeout` when no answer came in time,
   * `refused` when the NATS server's permissions do not let this client send on the agent's
   * subject or receive on its inbox. With `sharedSubjects`, workers of other agents receive a call
   * too (and drop it), so when only they are on the bus the call ends with the `timeout`.
   */
  async callTool(agent: string, tool: string, args: JsonObject = {}, options: BusCallOptions = {}): Promise<CallToolResult> {
    checkAgent(agent);
    const id = options.id ?? randomUUID();
    const subject = this.sharedSubjects ? BUS_SUBJECTS.invoke : invokeSubject(agent);
    const msg = await this.request(subject, agent, { id, agent, tool, arguments: args }, options.timeoutMs, options.signal);
    const checked = checkMessage(invokeResultSchema, this.answerBody(msg), "answer");
    if (!checked.ok) throw malformedAnswer(checked.problem);
    const answer = checked.value;
    if (!answer.ok) throw workerError(answer.error, answer.worker);
    if (answer.id !== id) throw malformedAnswer(`the answer is to request ${JSON.stringify(answer.id)}, not ${JSON.stringify(id)}`);
    return answer.result as CallToolResult;
  }

  /**
   * Runs a program against `agent`'s tools (code mode's `run_code` on a worker): the body of an
   * async function with one global per server. Resolves like `Bridge.runCode`, with what the run
   * produced and the answer a model reads; a program that ran and failed has `result.ok` false
   * (the worker's answer gave its bus code too), it is not thrown. The requester waits the
   * client's timeout, or 5 s longer than the run's own `timeout_ms` when that is longer.
   *
   * @throws BusCallError when the run did not happen or no answer came: `bad_request` (limits out
   * of bounds), `busy`, `shutting_down`, `unavailable`, `timeout`, `refused`, as {@link callTool}.
   */
  async runCode(agent: string, code: string, options: BusRunOptions = {}): Promise<RunCodeAnswer> {
    checkAgent(agent);
    const id = options.id ?? randomUUID();
    const body = { id, agent, code, ...(options.limits !== undefined ? { limits: options.limits as JsonObject } : {}) };
    const runMs = options.limits?.timeout_ms;
    const timeoutMs = options.timeoutMs ?? (runMs !== undefined ? Math.max(this.timeoutMs, runMs + 5_000) : this.timeoutMs);
    const msg = await this.request(runSubject(agent), agent, body, timeoutMs, options.signal);
    const checked = checkMessage(runResultMessageSchema, this.answerBody(msg), "answer");
    if (!checked.ok) throw malformedAnswer(checked.problem);
    const answer = checked.value;
    if (answer.id !== id) throw malformedAnswer(`the answer is to request ${JSON.stringify(answer.id)}, not ${JSON.stringify(id)}`);
    if (answer.run === undefined || answer.answer === undefined) {
      if (!answer.ok) throw workerError(answer.error, answer.worker);
      throw malformedAnswer("the answer has no run");
    }
    // Sound as far as the wire goes: checked against the protocol's schema; an error code a newer
    // worker has and this client lacks is passed on as the worker wrote it.
    return { result: answer.run as unknown as RunCodeAnswer["result"], answer: answer.answer as CallToolResult };
  }

  private async request(subject: string, agent: string, body: JsonObject, timeoutMs = this.timeoutMs, signal?: AbortSignal): Promise<Msg> {
    if (this.closePromise !== undefined) throw new AbridgeError(ErrorCode.BUS_UNAVAILABLE, "the bus client is closed");
    if (signal?.aborted) throw new AbridgeError(ErrorCode.CANCELLED, "the request was cancelled", { cause: signal.reason });
    const marked = headers();
    marked.set(CONTENT_TRUST_HEADER, CONTENT_TRUST.request);
    marked.set("Content-Type", "application/json");
    const sent = this.nc.request(subject, JSON.stringify(body), { timeout: timeoutMs, headers: marked });
    try {
      if (signal === undefined) return await sent;
      return await new Promise<Msg>((resolve, reject) => {
        const onAbort = (): void => reject(new AbridgeError(ErrorCode.CANCELLED, "the request was cancelled", { cause: signal.reason }));
        signal.addEventListener("abort", onAbort, { once: true });
        sent.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
      });
    } catch (err) {
      throw requestError(err, subject, agent, timeoutMs);
    }
  }

  /** The answer's JSON, once its trust header says it is a worker's output. */
  private answerBody(msg: Msg): unknown {
    const trust = msg.headers?.get(CONTENT_TRUST_HEADER) ?? "";
    if (trust !== CONTENT_TRUST.output)
      throw malformedAnswer(`expected the header ${CONTENT_TRUST_HEADER}: ${CONTENT_TRUST.output}, got ${trust === "" ? "none" : JSON.stringify(trust)}`);
    const body = readJson(msg.data);
    if (!body.ok) throw malformedAnswer(body.problem);
    return body.value;
  }

  /** Closes the connection (requests still waiting fail). Idempotent. */
  close(): Promise<void> {
    this.closePromise ??= this.nc.close().catch(() => undefined);
    return this.closePromise;
  }
}

function checkAgent(agent: string): void {
  const problem = agentNameProblem(agent);
  if (problem !== undefined) throw new AbridgeError(ErrorCode.INPUT_INVALID, `agent name: ${problem}`);
}

function workerError(error: { code: BusErrorCode; message: string; retryable: boolean }, worker: string): BusCallError {
  return new BusCallError(error.code, error.message, { retryable: error.retryable, origin: "worker", worker });
}

function malformedAnswer(problem: string): BusCallError {
  return new BusCallError("internal", `malformed answer on the bus: ${problem}`, { retryable: false, origin: "client" });
}

/** What a failed NATS request means for the caller. */
function requestError(err: unknown, subject: string, agent: string, timeoutMs: number): Error {
  if (err instanceof AbridgeError) return err;
  const denied =
    err instanceof PermissionViolationError ? err : err instanceof RequestError && err.cause instanceof PermissionViolationError ? err.cause : undefined;
  if (denied !== undefined) {
    const what =
      denied.operation === "publish" ? `send on ${denied.subject}` : `receive answers on ${denied.subject} (set an inbox prefix the permissions allow)`;
    return new BusCallError("refused", `the NATS server's permissions do not let this client ${what}: ${denied.message}`, {
      retryable: false,
      origin: "client",
      cause: err,
    });
  }
  const timedOut = err instanceof TimeoutError || (err instanceof RequestError && err.cause instanceof TimeoutError);
  // Also what a call to an agent without workers gets while other agents' workers are on the bus:
  // they receive it and drop it, so the server has no no-responders status to send.
  if (timedOut) {
    return new BusCallError("timeout", `no answer from a worker of agent ${agent} on ${subject} within ${timeoutMs} ms`, {
      retryable: true,
      origin: "client",
      cause: err,
    });
  }
  // The server's answer when nothing subscribes to the subject: no worker of the agent (of any
  // agent, on a shared subject) is on the bus. The client reports it as a RequestError caused by
  // a NoRespondersError.
  if (err instanceof NoRespondersError || (err instanceof RequestError && err.isNoResponders())) {
    return new BusCallError("unavailable", `no worker of agent ${agent} is on the bus: nothing listens on ${subject}`, {
      retryable: true,
      origin: "client",
      cause: err,
    });
  }
  return new AbridgeError(ErrorCode.BUS_UNAVAILABLE, `request on ${subject} failed: ${messageOf(err)}`, { cause: err, retryable: true });
}
