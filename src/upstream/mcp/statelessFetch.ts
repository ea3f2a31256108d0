import { isObject } from "../../model/json.js";
import type { JsonObject } from "../../model/types.js";
import { encodeHeaderValue } from "./paramHeaders.js";
import { META_PROTOCOL_VERSION } from "../../model/mcpRevision.js";

/** Most bytes of an HTTP error answer read to find a JSON-RPC error in it. */
const ERROR_BODY_LIMIT = 64 * 1024;

/** Requests whose `Mcp-Name` header mirrors a field of their params. */
const NAME_FIELD: Readonly<Record<string, string>> = { "tools/call": "name", "prompts/get": "name", "resources/read": "uri" };

/** A stateless request as it goes out in one POST. */
interface StatelessRequest {
  id: string | number;
  method: string;
  version: string;
  name: string | undefined;
  /** A tools/call's arguments. */
  args: JsonObject;
}

/**
 * A `fetch` for the streamable HTTP transport that makes each POST of a stateless (2026-07-28)
 * request what that revision's HTTP binding asks for, read from the message itself, so one
 * transport serves the `server/discover` probe and, if the server turns out older, the
 * initialize handshake after it:
 *
 * - the headers `MCP-Protocol-Version` (the revision in the request's `_meta`), `Mcp-Method` and,
 *   for `tools/call`, `prompts/get` and `resources/read`, `Mcp-Name`, encoded as the revision says
 *   (a value that is not plain printable ASCII goes as `=?base64?...?=`), and for a tools/call the
 *   `Mcp-Param-*` headers its tool declares (`paramHeaders`, see paramHeaders.ts);
 * - an answer with a 4xx status whose body is a JSON-RPC error is handed on as that error (status
 *   200, the request's id when the body has none): the SDK's transport would otherwise throw
 *   "Error POSTing to endpoint" and lose the error's code, which is what tells a server of the
 *   older revisions (no session, not initialized) from a stateless one, and what a stateless
 *   server means by its refusal.
 *
 * Requests of the initialize handshake (no revision in `_meta`) go out as they came; the answer
 * to `initialize` itself is read the same way, so a stateless server's refusal of it (-32022)
 * reaches the client as such. Any other answer of the older revisions is left alone: a 404 there
 * means an expired session, which the transport must see as the HTTP error it is.
 */
export function statelessFetch(base: typeof fetch, paramHeaders?: (tool: string, args: JsonObject) => Record<string, string>): typeof fetch {
  return async (input, init) => {
    const request = statelessRequestOf(init);
    if (request === undefined) {
      const id = initializeIdOf(init);
      if (id === undefined) return base(input, init);
      const response = await base(input, init);
      if (response.status < 400 || response.status >= 500 || response.body === null) return response;
      return (await errorAsAnswer(response, id)) ?? response;
    }
    const headers = new Headers(init?.headers);
    headers.set("MCP-Protocol-Version", request.version);
    headers.set("Mcp-Method", request.method);
    if (request.name !== undefined) headers.set("Mcp-Name", encodeHeaderValue(request.name));
    if (request.method === "tools/call" && request.name !== undefined && paramHeaders !== undefined) {
      for (const [header, value] of Object.entries(paramHeaders(request.name, request.args))) headers.set(header, value);
    }
    const response = await base(input, { ...init, headers });
    if (response.status < 400 || response.status >= 500 || response.body === null) return response;
    return (await errorAsAnswer(response, request.id)) ?? response;
  };
}

/** The stateless request a POST carries, if it carries one. */
function statelessRequestOf(init: RequestInit | undefined): StatelessRequest | undefined {
  if (typeof init?.body !== "string") return undefined;
  let message: unknown;
  try {
    message = JSON.parse(init.body);
  } catch {
    return undefined;
  }
  if (!isObject(message) || typeof message.method !== "string" || (typeof message.id !== "string" && typeof message.id !== "number")) return undefined;
  const params = isObject(message.params) ? message.params : {};
  const meta = isObject(params._meta) ? params._meta : {};
  const version = meta[META_PROTOCOL_VERSION];
  if (typeof version !== "string") return undefined;
  const field = Object.hasOwn(NAME_FIELD, message.method) ? NAME_FIELD[message.method] : undefined;
  const name = field !== undefined && typeof params[field] === "string" ? params[field] : undefined;
  return { id: message.id, method: message.method, version, name, args: isObject(params.arguments) ? params.arguments : {} };
}

/** The id of the `initialize` request a POST carries, if it carries one. */
function initializeIdOf(init: RequestInit | undefined): string | number | undefined {
  if (typeof init?.body !== "string" || !init.body.includes('"initialize"')) return undefined;
  try {
    const message: unknown = JSON.parse(init.body);
    if (!isObject(message) || message.method !== "initialize") return undefined;
    return typeof message.id === "string" || typeof message.id === "number" ? message.id : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The JSON-RPC error in a 4xx answer, as a 200 answer to request `id`; undefined when the body is
 * something else (an error page) or too long to be one, so the transport reports the status.
 */
async function errorAsAnswer(response: Response, id: string | number): Promise<Response | undefined> {
  const text = await readSome(response, ERROR_BODY_LIMIT);
  const rebuilt = (): Response => new Response(text ?? "", { status: response.status, statusText: response.statusText, headers: response.headers });
  if (text === undefined) return rebuilt();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return rebuilt();
  }
  if (!isObject(body) || !isObject(body.error) || typeof body.error.code !== "number" || typeof body.error.message !== "string") return rebuilt();
  const answer = { jsonrpc: "2.0", id: typeof body.id === "string" || typeof body.id === "number" ? body.id : id, error: body.error };
  return new Response(JSON.stringify(answer), { status: 200, headers: { "content-type": "application/json" } });
}

/** The body as text, or undefined when it runs past `limit` bytes (then left unread). */
async function readSome(response: Response, limit: number): Promise<string | undefined> {
  const reader = response.body!.getReader();
  const chunks: Uint8Array[] = [];
  let bytes = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    bytes += value.byteLength;
    if (bytes > limit) {
      await reader.cancel().catch(() => undefined);
      return undefined;
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString("utf8");
}
