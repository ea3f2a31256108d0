import { ErrorCode as RpcCode } from "@modelcontextprotocol/sdk/types.js";
import { BoundedLineReader, type DroppedLine } from "../../util/boundedLineReader.js";
import { responseIdOfDroppedLine } from "../process/childStdioTransport.js";

/** What {@link boundedFetch} reports about a message it dropped. */
export interface DroppedMessage {
  /** Bytes of the dropped message (or of the body read before it was cut off). */
  bytes: number;
  limit: number;
  /** The request it answered, when that could be told. */
  id?: string | number;
}

/** The bound of a message from the server: one number, or one per method of the request it answers. */
export type MessageLimit = number | ((method: string | undefined) => number);

/**
 * A `fetch` for the SDK's HTTP and SSE client transports that bounds every message from the
 * server as the stdio transport does. The SDK reads an `application/json` answer whole
 * (`response.json()`) and an event stream event by event with no limit on an event's size, so a
 * 300 MB result peaked at 1.6 GB and a larger one failed the connection.
 *
 * - An event stream (a POST's answer or the long-lived GET stream) is read as lines with a
 *   {@link BoundedLineReader}: a `data:` line over `maxMessageBytes` is dropped as it streams in
 *   (only its two ends are kept), and when it was the answer to a request, a JSON-RPC error for
 *   that id takes its place, so that call fails now with "result over N bytes" and the stream and
 *   every other call go on.
 * - A JSON body over the bound (by `content-length`, or counted as it streams) is let go of as it
 *   streams in and replaced by the same error answer to the POST's request.
 *
 * With `maxMessageBytes` a function, the bound of a POST's answer (JSON body or event stream) is
 * the one for its request's method; the long-lived GET stream gets the one for `undefined`.
 */
export function boundedFetch(maxMessageBytes: MessageLimit, onDropped: (dropped: DroppedMessage) => void, base: typeof fetch = fetch): typeof fetch {
  return async (input, init) => {
    const response = await base(input, init);
    // Only answers carry messages; a redirect or an error page is left to the SDK as it came.
    if (response.body === null || !response.ok) return response;
    const request = requestOf(init);
    const limit = typeof maxMessageBytes === "number" ? maxMessageBytes : maxMessageBytes(request?.method);
    const type = response.headers.get("content-type") ?? "";
    const body = type.includes("text/event-stream")
      ? response.body.pipeThrough(boundedEvents(limit, onDropped))
      : response.body.pipeThrough(boundedBody(limit, Number(response.headers.get("content-length") ?? NaN), request?.id, onDropped));
    return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  };
}

/** The answer put in place of a dropped one: what the stdio transport answers too. */
function droppedAnswer(id: string | number, limit: number, bytes: number): string {
  return JSON.stringify({ jsonrpc: "2.0", id, error: { code: RpcCode.InternalError, message: `result over ${limit} bytes (${bytes} bytes); dropped` } });
}

/** The JSON-RPC id of a dropped `data:` line, read from its two ends. */
function idOfDroppedData(line: DroppedLine): string | number | undefined {
  const data = /^data: ?/.exec(line.head);
  if (data === null) return undefined;
  return responseIdOfDroppedLine({ ...line, head: line.head.slice(data[0].length) });
}

function boundedEvents(limit: number, onDropped: (dropped: DroppedMessage) => void): TransformStream<Uint8Array, Uint8Array> {
  const reader = new BoundedLineReader(limit);
  const encoder = new TextEncoder();
  const emit = (events: ReturnType<BoundedLineReader["push"]>, controller: TransformStreamDefaultController<Uint8Array>): void => {
    for (const event of events) {
      if ("line" in event) {
        controller.enqueue(encoder.encode(`${event.line}\n`));
        continue;
      }
      const id = idOfDroppedData(event.dropped);
      onDropped({ bytes: event.dropped.bytes, limit, ...(id !== undefined ? { id } : {}) });
      if (id !== undefined) controller.enqueue(encoder.encode(`data: ${droppedAnswer(id, limit, event.dropped.bytes)}\n`));
    }
  };
  return new TransformStream({
    transform(chunk, controller) {
      emit(reader.push(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)), controller);
    },
    flush(controller) {
      // An unterminated last line (the server closed mid-event): finish it as if it had ended.
      if (reader.bufferedBytes > 0 || reader.overflowing) emit(reader.push(Buffer.from("\n")), controller);
    },
  });
}

/** The id and method of the one request a POST carries (the SDK sends one message per POST), if any. */
function requestOf(init: RequestInit | undefined): { id: string | number; method: string } | undefined {
  if (typeof init?.body !== "string") return undefined;
  try {
    const message = JSON.parse(init.body) as { id?: unknown; method?: unknown };
    return typeof message.method === "string" && (typeof message.id === "string" || typeof message.id === "number")
      ? { id: message.id, method: message.method }
      : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A JSON body, held back until it is complete (its chunks, at most `limit` bytes) and then passed
 * on, or, once it goes over `limit`, let go of and replaced by an error answer to `id`. Passing
 * bytes on as they came would leave nothing to replace: the reader would already hold them.
 */
function boundedBody(
  limit: number,
  declared: number,
  id: string | number | undefined,
  onDropped: (dropped: DroppedMessage) => void,
): TransformStream<Uint8Array, Uint8Array> {
  let held: Uint8Array[] = [];
  let seen = 0;
  let dropped = false;
  const drop = (controller: TransformStreamDefaultController<Uint8Array>, bytes: number): void => {
    dropped = true;
    held = [];
    onDropped({ bytes, limit, ...(id !== undefined ? { id } : {}) });
    // Without an id to answer, the read fails: the SDK then fails that POST's request.
    if (id === undefined) controller.error(new Error(`result over ${limit} bytes; dropped`));
    else controller.enqueue(new TextEncoder().encode(droppedAnswer(id, limit, bytes)));
  };
  return new TransformStream({
    start(controller) {
      if (Number.isFinite(declared) && declared > limit) drop(controller, declared);
    },
    transform(chunk, controller) {
      seen += chunk.byteLength;
      if (dropped) return;
      if (seen > limit) drop(controller, seen);
      else held.push(chunk);
    },
    flush(controller) {
      for (const chunk of held) controller.enqueue(chunk);
      held = [];
    },
  });
}
