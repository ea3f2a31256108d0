/**
 * How a worker reads a request from the bus: its body and its trust header checked against the
 * schemas of `wire/busProtocol.ts`, and a malformed one answered with `bad_request`. Kept apart
 * from `busWorker.ts` because the rules for telling another agent's message from a malformed one
 * (shared subjects, the agent's own subjects) are a protocol matter of their own, and the worker
 * only needs a request or nothing.
 */
import type { Msg } from "@nats-io/transport-node";
import type { z } from "zod";
import type { RateLimitedLog } from "../../log/rateLimitedLog.js";
import { isObject } from "../../model/json.js";
import {
  agentNameProblem,
  BUS_SUBJECTS,
  busIdSchema,
  checkMessage,
  CONTENT_TRUST,
  CONTENT_TRUST_HEADER,
  invokeSubject,
  readJson,
  resultSubject,
  type BusId,
  type InvokeResult,
  type RefreshError,
} from "../wire/busProtocol.js";
import { busError } from "./busErrors.js";

/** What reading a request needs of its worker. */
export interface RequestReaderContext {
  agent: string;
  /** The worker's id, named in an answer. */
  worker: string;
  /** Publishes JSON marked untrusted; false when it could not be sent. */
  send(subject: string, body: unknown, what: string): boolean;
  /** Where malformed messages with nowhere to answer are logged, rate-limited. */
  malformed: RateLimitedLog;
}

/**
 * Reads a request's body and header. On a shared subject, another agent's message is
 * `undefined` (its own workers answer it); a malformed one is answered here and is `undefined`
 * too. On the agent's own subject (`ownSubject`) the message is this agent's, and one naming
 * another agent is malformed.
 */
export function readRequest<T>(context: RequestReaderContext, msg: Msg, schema: z.ZodType<T>, ownSubject: boolean, emptyIs?: unknown): T | undefined {
  const body = msg.data.length === 0 && emptyIs !== undefined ? ({ ok: true, value: emptyIs } as const) : readJson(msg.data);
  if (!body.ok) {
    refuse(context, msg, { id: null, mine: ownSubject }, body.problem);
    return undefined;
  }
  const value = body.value;
  const agent = isObject(value) ? value.agent : undefined;
  const valid = typeof agent === "string" && agentNameProblem(agent) === undefined;
  const idField = isObject(value) ? busIdSchema.safeParse(value.id) : undefined;
  if (valid && agent !== context.agent) {
    if (!ownSubject) return undefined;
    refuse(
      context,
      msg,
      { id: idField?.success ? idField.data : null, mine: true },
      `the message names agent ${JSON.stringify(agent)} on ${msg.subject}, the subject of agent ${context.agent}`,
    );
    return undefined;
  }
  const known = { id: idField?.success ? idField.data : null, mine: valid || ownSubject };
  const trust = msg.headers?.get(CONTENT_TRUST_HEADER) ?? "";
  if (trust !== CONTENT_TRUST.request) {
    const got = trust === "" ? "none" : JSON.stringify(trust);
    refuse(context, msg, known, `a request must carry the header ${CONTENT_TRUST_HEADER}: ${CONTENT_TRUST.request} (got ${got})`);
    return undefined;
  }
  const checked = checkMessage(schema, value, "request");
  if (!checked.ok) {
    refuse(context, msg, known, checked.problem);
    return undefined;
  }
  return checked.value;
}

/**
 * Answers a malformed request with `bad_request`: to its reply subject, else on
 * `tool.result.<agent>` when it named this agent, else only in the log.
 */
function refuse(context: RequestReaderContext, msg: Msg, known: { id: BusId | null; mine: boolean }, problem: string): void {
  const error = busError("bad_request", `malformed message on ${msg.subject}: ${problem}`);
  const answer: InvokeResult | RefreshError = { id: known.id, agent: context.agent, worker: context.worker, ok: false, error };
  const reply = replyOf(msg);
  if (reply !== undefined) context.send(reply, answer, "error answer");
  else if (known.mine && (msg.subject === BUS_SUBJECTS.invoke || msg.subject === invokeSubject(context.agent)))
    context.send(resultSubject(context.agent), answer, "error answer");
  else context.malformed.warn({ subject: msg.subject, problem });
}

/**
 * Who sent a call, as far as the bus tells: the reply subject less its last token, which the NATS
 * client keeps for all the requests of one connection (`_INBOX.<connection>.<request>`). Calls
 * without a reply subject share one key.
 */
export function requesterOf(msg: Msg): string {
  const reply = replyOf(msg);
  if (reply === undefined) return "";
  const dot = reply.lastIndexOf(".");
  return dot === -1 ? reply : reply.slice(0, dot);
}

/** The reply subject of a message; the client gives "" for a message sent without one. */
export function replyOf(msg: Msg): string | undefined {
  return msg.reply === undefined || msg.reply === "" ? undefined : msg.reply;
}
