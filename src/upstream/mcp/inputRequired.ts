import { AbridgeError, ErrorCode, isAbridgeError, messageOf } from "../../model/errors.js";
import { isObject } from "../../model/json.js";
import type { ClientRelay, JsonObject } from "../../model/types.js";

/**
 * Most `input_required` rounds one request may take: a server that keeps asking after this many
 * answered rounds is broken or looping, and the caller gets an error instead of a call that
 * never ends.
 */
export const MAX_INPUT_ROUNDS = 10;

/** What a stateless server may ask the user's client for inside `input_required`. */
const INPUT_METHODS: ReadonlySet<string> = new Set(["sampling/createMessage", "elicitation/create", "roots/list"]);

/** The kind of a stateless result (`resultType`); absent means `complete`. */
export function resultTypeOf(result: JsonObject): string {
  return typeof result.resultType === "string" ? result.resultType : "complete";
}

/** A complete result without its `resultType` (a field of the stateless wire only), as a client of either revision reads it. */
export function completeResult<T extends JsonObject>(result: T): T {
  if (!("resultType" in result)) return result;
  const { resultType: _kind, ...rest } = result;
  return rest as T;
}

/** Where a request that needs input came from, for the messages. */
export interface InputContext {
  server: string;
  method: string;
  /** The client behind the call, if any (none: the CLI, the daemon). */
  relay: ClientRelay | undefined;
  signal: AbortSignal;
}

/**
 * Answers an `input_required` result: every request in `inputRequests` (sampling, elicitation,
 * roots) is put to the client behind the call through its relay, as the same request a server of
 * the older revisions would have sent it, and the answers come back keyed as asked, with the
 * server's `requestState`, for the retry of the original request.
 *
 * @throws AbridgeError UPSTREAM_INPUT_REQUIRED when there is no client to ask, a request is of a
 *   kind abridge cannot relay, or the client could not answer (it lacks the capability, or
 *   failed); CANCELLED when the caller gave up meanwhile.
 */
export async function answerInput(result: JsonObject, context: InputContext): Promise<JsonObject> {
  const { server, method, relay, signal } = context;
  const requests = isObject(result.inputRequests) ? result.inputRequests : {};
  const state = typeof result.requestState === "string" ? { requestState: result.requestState } : {};
  const entries = Object.entries(requests);
  if (entries.length > 0 && relay === undefined) {
    const kinds = [...new Set(entries.map(([, r]) => (isObject(r) && typeof r.method === "string" ? r.method : "?")))].join(", ");
    throw new AbridgeError(
      ErrorCode.UPSTREAM_INPUT_REQUIRED,
      `${server}: ${method} needs input from the user's client (${kinds}), and this call has no client that can answer (called from the CLI or the daemon)`,
      { details: { server, method, requests: kinds } },
    );
  }
  const answers = await Promise.all(
    entries.map(async ([key, request]) => {
      const kind = isObject(request) && typeof request.method === "string" ? request.method : undefined;
      if (kind === undefined || !INPUT_METHODS.has(kind)) {
        throw new AbridgeError(
          ErrorCode.UPSTREAM_INPUT_REQUIRED,
          `${server}: ${method} asked for input of an unknown kind (${kind ?? "no method"}, key "${key}")`,
          {
            details: { server, method, key },
          },
        );
      }
      const params = isObject(request) && isObject(request.params) ? request.params : {};
      try {
        return [key, await relay!.request(kind, params, signal)] as const;
      } catch (err) {
        if (signal.aborted)
          throw new AbridgeError(ErrorCode.CANCELLED, `${server}: ${method} was cancelled while its client was asked for ${kind}`, { cause: err });
        if (isAbridgeError(err)) throw err;
        throw new AbridgeError(
          ErrorCode.UPSTREAM_INPUT_REQUIRED,
          `${server}: ${method} needs ${kind} from the user's client, which could not answer: ${messageOf(err)}`,
          {
            cause: err,
            details: { server, method, request: kind },
          },
        );
      }
    }),
  );
  return { inputResponses: Object.fromEntries(answers), ...state };
}

/** The server still asks after {@link MAX_INPUT_ROUNDS} answered rounds. */
export function tooManyRounds(server: string, method: string): AbridgeError {
  return new AbridgeError(ErrorCode.UPSTREAM_INPUT_REQUIRED, `${server}: ${method} still asked for input after ${MAX_INPUT_ROUNDS} answered rounds; given up`, {
    details: { server, method, rounds: MAX_INPUT_ROUNDS },
  });
}

/** A `resultType` abridge does not know: not a result it can pass on. */
export function unknownResultType(server: string, method: string, kind: string): AbridgeError {
  return new AbridgeError(ErrorCode.UPSTREAM_ERROR, `${server}: ${method} answered with resultType "${kind}", which abridge does not know`, {
    details: { server, method, resultType: kind },
  });
}
