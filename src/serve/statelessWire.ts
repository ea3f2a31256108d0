import { SUPPORTED_PROTOCOL_VERSIONS } from "@modelcontextprotocol/sdk/types.js";
import { isObject } from "../model/json.js";
import { META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION, RPC_UNSUPPORTED_VERSION, STATELESS_REVISION } from "../model/mcpRevision.js";
import type { JsonObject } from "../model/types.js";

/**
 * The wire vocabulary of MCP revision 2026-07-28, the stateless one: no `initialize`, no session;
 * every request names its protocol version and the client's capabilities in `_meta`.
 */
export const STATELESS_VERSION = STATELESS_REVISION;
/** Revisions served without a handshake. */
export const STATELESS_VERSIONS: readonly string[] = [STATELESS_VERSION];
/** Revisions served with the initialize handshake (the 1.x SDK's list, newest first). */
export const LEGACY_VERSIONS: readonly string[] = SUPPORTED_PROTOCOL_VERSIONS;
/** Every revision abridge serves, as `server/discover` and -32022 list them. */
export const ALL_VERSIONS: readonly string[] = [...STATELESS_VERSIONS, ...LEGACY_VERSIONS];

export { META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_PROTOCOL_VERSION, META_SERVER_INFO, RPC_UNSUPPORTED_VERSION } from "../model/mcpRevision.js";
export const META_LOG_LEVEL = "io.modelcontextprotocol/logLevel";
export const META_SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId";
/**
 * Where an upstream may name the key its sampling, elicitation or roots request gets in an
 * `input_required` result (`params._meta`); without it abridge numbers them.
 */
export const META_INPUT_KEY = "abridge/inputKey";

/** JSON-RPC codes the revision adds. */
export const RPC_HEADER_MISMATCH = -32020;
export const RPC_MISSING_CLIENT_CAPABILITY = -32021;

/** Methods of the handshake era that 2026-07-28 removed: refused -32601 (HTTP 404). */
export const REMOVED_METHODS: ReadonlySet<string> = new Set([
  "initialize",
  "ping",
  "logging/setLevel",
  "resources/subscribe",
  "resources/unsubscribe",
  "notifications/initialized",
]);

/** A JSON-RPC error as a stateless answer carries it, with the HTTP status it goes out with. */
export interface StatelessError {
  code: number;
  message: string;
  data?: JsonObject;
}

/** The `_meta` of a request's params, when it has one. */
export function requestMeta(message: unknown): JsonObject | undefined {
  if (!isObject(message) || !isObject(message.params)) return undefined;
  const meta = message.params._meta;
  return isObject(meta) ? meta : undefined;
}

/**
 * Whether a request without a session belongs to the stateless era: it names its version in
 * `_meta`, asks for `server/discover` or `subscriptions/listen` (methods only that era has), or,
 * over HTTP, sends an `MCP-Protocol-Version` header the handshake era does not know. A client of
 * 2024-11-05 to 2025-11-25 sends none of these before its session exists, so it is never taken
 * for one: it sees exactly what it saw before this revision.
 */
export function isStatelessRequest(message: unknown, versionHeader?: string): boolean {
  if (versionHeader !== undefined && !LEGACY_VERSIONS.includes(versionHeader)) return true;
  if (!isObject(message)) return false;
  if (message.method === "server/discover" || message.method === "subscriptions/listen") return true;
  return requestMeta(message)?.[META_PROTOCOL_VERSION] !== undefined;
}

/**
 * Why a stateless request's `_meta` cannot be served, or undefined: the keys the revision
 * requires missing (-32602), or a version abridge does not serve statelessly (-32022, listing the
 * versions it does serve and echoing the one asked for).
 */
export function metaError(meta: JsonObject | undefined): StatelessError | undefined {
  const missing = [META_PROTOCOL_VERSION, META_CLIENT_CAPABILITIES].filter((key) => meta?.[key] === undefined);
  if (missing.length > 0) {
    return { code: -32602, message: `Invalid params: _meta lacks ${missing.join(" and ")} (required by protocol revision ${STATELESS_VERSION})` };
  }
  const version = meta?.[META_PROTOCOL_VERSION];
  if (typeof version !== "string" || !STATELESS_VERSIONS.includes(version)) {
    return {
      code: RPC_UNSUPPORTED_VERSION,
      message: `Unsupported protocol version ${JSON.stringify(version)}: abridge serves ${STATELESS_VERSIONS.join(", ")} without a session and ${LEGACY_VERSIONS.join(", ")} after initialize`,
      data: { supported: [...ALL_VERSIONS], requested: String(version) },
    };
  }
  if (!isObject(meta?.[META_CLIENT_CAPABILITIES])) {
    return { code: -32602, message: `Invalid params: _meta["${META_CLIENT_CAPABILITIES}"] must be an object` };
  }
  return undefined;
}

/** The HTTP status a stateless error goes out with, as the revision maps them. */
export function httpStatusOf(code: number): number {
  switch (code) {
    case -32601:
      return 404;
    case -32700:
    case -32600:
    case -32602:
    case RPC_HEADER_MISMATCH:
    case RPC_MISSING_CLIENT_CAPABILITY:
    case RPC_UNSUPPORTED_VERSION:
      return 400;
    case -32603:
      return 500;
    default:
      return 200;
  }
}

/** The name the `Mcp-Name` header must carry for a request: the tool or prompt name, or the resource URI. */
export function mcpNameOf(method: string, params: JsonObject | undefined): string | undefined {
  if (method === "tools/call" || method === "prompts/get") return typeof params?.name === "string" ? params.name : undefined;
  if (method === "resources/read") return typeof params?.uri === "string" ? params.uri : undefined;
  return undefined;
}
