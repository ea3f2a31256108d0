import { z } from "zod";
import { AbridgeError, ErrorCode } from "../../../model/errors.js";
import { isObject } from "../../../model/json.js";
import { describeIssues, isRequestIdOrAbsent, requestIdSchema, type DaemonOp, type RequestId } from "./requests.js";
import { daemonStatsSchema, daemonToolSchema, discoverySchema, runResultSchema, toolResultSchema, toolSchemaSchema } from "./results.js";

/**
 * Answers. Each op's `ok: true` answer has a body of its own (below); every failure has the same
 * shape. The daemon builds its answers with these types and the client parses every answer with
 * these schemas, so both sides agree on one definition. Objects a later version may grow (results,
 * stats) are loose: fields a client does not know pass through untouched.
 */

/** The body of each op's `ok: true` answer (besides `ok` and `id`). */
export const answerBodySchemas = {
  list_tools: z.object({
    tools: z.array(daemonToolSchema),
    /** Servers still starting when the list was taken (absent when none). */
    starting: z.array(z.string()).optional(),
  }),
  call_tool: z.object({ result: toolResultSchema }),
  get_schema: z.object({ schema: toolSchemaSchema }),
  /** `run`: what the run produced; `answer`: the text a model reads (`isError` when the run failed). */
  run_code: z.object({ run: runResultSchema, answer: toolResultSchema }),
  declare_tools: z.object({ declarations: z.string() }),
  read_output: z.object({ result: toolResultSchema }),
  options: z.object({}),
  cancel: z.object({ cancelled: z.boolean() }),
  stats: z.object({ stats: daemonStatsSchema }),
  refresh: z.object({ discovery: z.array(discoverySchema) }),
  shutdown: z.object({}),
} satisfies Record<DaemonOp, z.ZodType>;

/** The body of `op`'s `ok: true` answer. */
export type DaemonAnswerBody<Op extends DaemonOp = DaemonOp> = z.infer<(typeof answerBodySchemas)[Op]>;

/** The error part of a failed answer. A client takes codes it does not know too (a newer daemon's). */
export const wireErrorSchema = z.object({ code: z.string().min(1), message: z.string(), retryable: z.boolean() });
/** The error part of a failed answer. */
export type WireError = z.infer<typeof wireErrorSchema>;

/**
 * A failed answer. `id` is the request's; `null` when the daemon gave up on the whole connection
 * (a line it could not frame or parse), absent when the request had none.
 */
export const errorAnswerSchema = z.object({ id: requestIdSchema.optional(), ok: z.literal(false), error: wireErrorSchema });
/** A failed answer. */
export type DaemonErrorAnswer = z.infer<typeof errorAnswerSchema>;

/** `op`'s successful answer: its body, `id` and `ok: true`. */
function okAnswerSchema<Shape extends z.core.$ZodShape>(body: z.ZodObject<Shape>) {
  return body.extend({ id: requestIdSchema.optional(), ok: z.literal(true) });
}

/** Each op's successful answer; {@link isWellFormedResultAnswer} stands in for the `call_tool` one. */
export const okAnswerSchemas = {
  list_tools: okAnswerSchema(answerBodySchemas.list_tools),
  call_tool: okAnswerSchema(answerBodySchemas.call_tool),
  get_schema: okAnswerSchema(answerBodySchemas.get_schema),
  run_code: okAnswerSchema(answerBodySchemas.run_code),
  declare_tools: okAnswerSchema(answerBodySchemas.declare_tools),
  read_output: okAnswerSchema(answerBodySchemas.read_output),
  options: okAnswerSchema(answerBodySchemas.options),
  cancel: okAnswerSchema(answerBodySchemas.cancel),
  stats: okAnswerSchema(answerBodySchemas.stats),
  refresh: okAnswerSchema(answerBodySchemas.refresh),
  shutdown: okAnswerSchema(answerBodySchemas.shutdown),
} satisfies Record<DaemonOp, z.ZodType>;

/**
 * True when `value` is a well-formed successful `call_tool` (or `read_output`) answer, by the rules
 * of {@link okAnswerSchemas}' `call_tool` member, checked by hand: `ok: true`, a valid `id` and an
 * object `result` whose `content` (if any) is an array and whose `isError` (if any) is a boolean.
 * Other members pass, as the schema's open objects let them (unknown top-level ones the schema
 * would drop). False sends the answer to the schema.
 */
export function isWellFormedResultAnswer(value: unknown): boolean {
  if (!isObject(value) || value.ok !== true || !isRequestIdOrAbsent(value.id)) return false;
  const result = value.result;
  if (!isObject(result)) return false;
  if (result.content !== undefined && !Array.isArray(result.content)) return false;
  return result.isError === undefined || typeof result.isError === "boolean";
}

/** Each op's whole answer: its successful answer or a failure, told apart by `ok`. */
const answerSchemas = {
  list_tools: z.discriminatedUnion("ok", [okAnswerSchemas.list_tools, errorAnswerSchema]),
  call_tool: z.discriminatedUnion("ok", [okAnswerSchemas.call_tool, errorAnswerSchema]),
  get_schema: z.discriminatedUnion("ok", [okAnswerSchemas.get_schema, errorAnswerSchema]),
  run_code: z.discriminatedUnion("ok", [okAnswerSchemas.run_code, errorAnswerSchema]),
  declare_tools: z.discriminatedUnion("ok", [okAnswerSchemas.declare_tools, errorAnswerSchema]),
  read_output: z.discriminatedUnion("ok", [okAnswerSchemas.read_output, errorAnswerSchema]),
  options: z.discriminatedUnion("ok", [okAnswerSchemas.options, errorAnswerSchema]),
  cancel: z.discriminatedUnion("ok", [okAnswerSchemas.cancel, errorAnswerSchema]),
  stats: z.discriminatedUnion("ok", [okAnswerSchemas.stats, errorAnswerSchema]),
  refresh: z.discriminatedUnion("ok", [okAnswerSchemas.refresh, errorAnswerSchema]),
  shutdown: z.discriminatedUnion("ok", [okAnswerSchemas.shutdown, errorAnswerSchema]),
} satisfies Record<DaemonOp, z.ZodType>;

/** A successful answer to `op`. */
export type DaemonOkAnswer<Op extends DaemonOp = DaemonOp> = z.infer<(typeof okAnswerSchemas)[Op]>;

/** An answer line to `op`: its successful answer, or a failure. */
export type DaemonResponse<Op extends DaemonOp = DaemonOp> = DaemonOkAnswer<Op> | DaemonErrorAnswer;

/** The first look at an answer line: enough to match it to its request. */
export const answerEnvelopeSchema = z.looseObject({ id: requestIdSchema.optional(), ok: z.boolean() });

/** What {@link answerEnvelopeSchema} reads of an answer line. */
export type AnswerEnvelope = { id?: RequestId | undefined; ok: boolean };

/**
 * {@link answerEnvelopeSchema} checked by hand (every answer line is read this way first): the
 * envelope when the line has a boolean `ok` and a valid `id`, else undefined.
 */
export function envelopeByHand(value: unknown): AnswerEnvelope | undefined {
  if (!isObject(value)) return undefined;
  const { id, ok } = value;
  return typeof ok === "boolean" && isRequestIdOrAbsent(id) ? { id: id as RequestId | undefined, ok } : undefined;
}

/**
 * Reads an answer line's envelope (its `id` and `ok`), by hand when it is well-formed.
 *
 * @throws z.ZodError from {@link answerEnvelopeSchema} when it is not.
 */
export function readAnswerEnvelope(value: unknown): AnswerEnvelope {
  return envelopeByHand(value) ?? answerEnvelopeSchema.parse(value);
}

/**
 * Checks a parsed answer line against `op`'s answer schema.
 *
 * @throws AbridgeError DAEMON_BAD_RESPONSE naming the op and the first fields that were wrong.
 */
export function parseAnswer<Op extends DaemonOp>(op: Op, value: unknown): DaemonResponse<Op> {
  // A tool's result is handed to the caller as the line parsed it: walking and copying it with
  // zod cost more than the rest of the client's work on a call. Sound: the hand check accepts
  // only what the op's schema accepts (unknown members aside, which the schema would drop).
  if ((op === "call_tool" || op === "read_output") && isWellFormedResultAnswer(value)) return value as DaemonResponse<Op>;
  const parsed = answerSchemas[op].safeParse(value);
  if (!parsed.success) {
    const detail = describeIssues(parsed.error, "answer");
    throw new AbridgeError(ErrorCode.DAEMON_BAD_RESPONSE, `malformed answer from the daemon to ${op}: ${detail}`, { cause: parsed.error });
  }
  // Sound: the schema picked by `op` is the one `DaemonResponse<Op>` is inferred from (a generic
  // index does not let the compiler follow that).
  return parsed.data as DaemonResponse<Op>;
}

/** One answer as the line the daemon writes (newline included). */
export function answerLine(answer: DaemonResponse): string {
  return `${JSON.stringify(answer)}\n`;
}
