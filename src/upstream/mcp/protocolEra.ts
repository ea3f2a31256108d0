/**
 * Which era of MCP a connection speaks. The stateless revision (2026-07-28): no `initialize` and no
 * session; every request carries its revision, `clientInfo` and client capabilities in `_meta`, and
 * `server/discover` tells what a server has. Its wire words live in model/mcpRevision.ts.
 */
import { ErrorCode as RpcErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";
import { isStreamableHttpError } from "./lazyHttpTransport.js";
import { AbridgeError, ErrorCode, messageOf } from "../../model/errors.js";
import { isObject } from "../../model/json.js";
import type { JsonObject } from "../../model/types.js";
import {
  META_CLIENT_CAPABILITIES,
  META_CLIENT_INFO,
  META_PROTOCOL_VERSION,
  META_SERVER_INFO,
  RPC_UNSUPPORTED_VERSION as UNSUPPORTED_PROTOCOL_VERSION,
  STATELESS_REVISION,
} from "../../model/mcpRevision.js";

/** Which handshake a connection uses: `stateless` (2026-07-28) or `legacy` (initialize). */
export type ProtocolEra = "stateless" | "legacy";

/**
 * What abridge says it can do, in `initialize` and in every stateless request: it relays sampling,
 * elicitation and roots requests to the client behind a call (see requestRelay.ts and inputRequired.ts).
 */
export const CLIENT_CAPABILITIES: JsonObject = { sampling: {}, elicitation: {}, roots: {} };

/** The `_meta` envelope every stateless request carries. */
export function requestEnvelope(clientInfo: { name: string; version: string }): JsonObject {
  return {
    [META_PROTOCOL_VERSION]: STATELESS_REVISION,
    [META_CLIENT_INFO]: { name: clientInfo.name, version: clientInfo.version },
    [META_CLIENT_CAPABILITIES]: CLIENT_CAPABILITIES,
  };
}

/** What a stateless server said of itself in `server/discover`. */
export interface DiscoverResult {
  supportedVersions: string[];
  capabilities: JsonObject;
  instructions?: string;
  serverInfo?: { name: string; version: string };
}

/**
 * Reads a `server/discover` result; undefined when it is not one (no `supportedVersions` list of
 * strings or no `capabilities` object), which the probe takes for a server of the older revisions.
 */
export function readDiscoverResult(result: unknown): DiscoverResult | undefined {
  if (!isObject(result) || !isObject(result.capabilities)) return undefined;
  const versions = result.supportedVersions;
  if (!Array.isArray(versions) || !versions.every((v) => typeof v === "string")) return undefined;
  const meta = isObject(result._meta) ? result._meta : {};
  const info = meta[META_SERVER_INFO];
  return {
    supportedVersions: versions as string[],
    capabilities: result.capabilities,
    ...(typeof result.instructions === "string" ? { instructions: result.instructions } : {}),
    ...(isObject(info) && typeof info.name === "string" && typeof info.version === "string" ? { serverInfo: { name: info.name, version: info.version } } : {}),
  };
}

/** The verdict of a `server/discover` probe. */
export type ProbeVerdict =
  | { era: "stateless"; discover: DiscoverResult }
  /** `closed`: the server ended the connection on the probe (a stdio process that quit): a new one is needed. */
  | { era: "legacy"; reason: string; closed: boolean }
  /** -32022 listing 2026-07-28 itself: the server wants the request again in that revision (asked once more). */
  | { era: "retry"; reason: string };

/**
 * Classifies how a server answered `server/discover`, after the spec's guidance for clients of
 * both revisions: a result listing {@link STATELESS_REVISION} is a stateless server; -32022 naming
 * it among the supported revisions asks for the probe again; a JSON-RPC error (method not found,
 * "not initialized", an unsupported revision without a stateless one in `data.supported`), a
 * result that is no discover result, a closed or silent stdio connection, or over HTTP a 4xx other
 * than 401 and 403, is a server of the older revisions. Anything else (the network, a 5xx, 401,
 * 403) is not an answer: thrown, so the start fails and is retried as any start. `closed`: the
 * client's transport was gone when the error came.
 *
 * @throws AbridgeError UPSTREAM_PROTOCOL when the server speaks stateless revisions, none of them ours.
 */
export function classifyProbe(server: string, outcome: { result: unknown } | { error: unknown; closed: boolean }, stdio: boolean): ProbeVerdict {
  if ("result" in outcome) {
    const discover = readDiscoverResult(outcome.result);
    if (discover === undefined) return { era: "legacy", reason: "server/discover answered with something else than a discover result", closed: false };
    if (discover.supportedVersions.includes(STATELESS_REVISION)) return { era: "stateless", discover };
    const stateless = discover.supportedVersions.filter((v) => v >= STATELESS_REVISION);
    if (stateless.length > 0) throw unsupportedRevisions(server, stateless);
    return { era: "legacy", reason: `server/discover lists only ${discover.supportedVersions.join(", ") || "no revision"}`, closed: false };
  }
  const err = outcome.error;
  if (err instanceof McpError) {
    // -32000 is also what servers of the older revisions answer "not initialized" with: only a
    // connection that is gone makes it the SDK's "connection closed".
    if (outcome.closed && err.code === (RpcErrorCode.ConnectionClosed as number)) {
      if (stdio) return { era: "legacy", reason: "the server closed the connection on server/discover", closed: true };
      throw err;
    }
    if (err.code === (RpcErrorCode.RequestTimeout as number)) {
      if (stdio) return { era: "legacy", reason: "no answer to server/discover", closed: false };
      throw err;
    }
    if (err.code === UNSUPPORTED_PROTOCOL_VERSION) {
      const supported = isObject(err.data) && Array.isArray(err.data.supported) ? err.data.supported.filter((v): v is string => typeof v === "string") : [];
      const stateless = supported.filter((v) => v >= STATELESS_REVISION);
      if (stateless.length > 0 && !stateless.includes(STATELESS_REVISION)) throw unsupportedRevisions(server, stateless);
      if (stateless.includes(STATELESS_REVISION))
        return { era: "retry", reason: `server/discover refused with -32022 though the server lists ${STATELESS_REVISION}: ${err.message}` };
    }
    return { era: "legacy", reason: `server/discover failed with ${err.code}: ${err.message}`, closed: false };
  }
  // An HTTP server of the older revisions may refuse a POST before initialize with a bare 4xx
  // (no JSON-RPC body): not an answer of a stateless server. 401 and 403 are the server's
  // answer to who asks, whatever the revision, and a 5xx is no answer at all: both thrown.
  if (isStreamableHttpError(err) && typeof err.code === "number" && err.code >= 400 && err.code < 500 && err.code !== 401 && err.code !== 403) {
    return { era: "legacy", reason: `server/discover was refused with HTTP ${err.code}`, closed: false };
  }
  throw err;
}

/** The server speaks only stateless revisions abridge does not know. */
function unsupportedRevisions(server: string, revisions: string[]): AbridgeError {
  return new AbridgeError(
    ErrorCode.UPSTREAM_PROTOCOL,
    `${server}: the server speaks MCP ${revisions.join(", ")}; abridge speaks ${STATELESS_REVISION} and the initialize handshake`,
    { details: { server, supported: revisions } },
  );
}

/**
 * `protocol = "2026-07-28"` and the server is not a stateless one: named, with the revision and
 * what the server did, and the setting that would reach it.
 */
export function statelessRequired(server: string, reason: string): AbridgeError {
  return new AbridgeError(
    ErrorCode.UPSTREAM_PROTOCOL,
    `${server}: protocol = "${STATELESS_REVISION}" but the server does not speak MCP ${STATELESS_REVISION} (${reason}); set protocol = "auto" or "legacy" for a server of the initialize handshake`,
    { details: { server, protocol: STATELESS_REVISION } },
  );
}

/**
 * `protocol = "legacy"` and the server refused `initialize` as a stateless-only server does
 * (-32022 naming only stateless revisions): named, with the setting that would reach it. Other
 * failures are left as they are.
 */
export function legacyRefused(server: string, err: unknown): AbridgeError | undefined {
  if (!(err instanceof McpError) || err.code !== UNSUPPORTED_PROTOCOL_VERSION) return undefined;
  return new AbridgeError(
    ErrorCode.UPSTREAM_PROTOCOL,
    `${server}: protocol = "legacy" but the server refused initialize (${messageOf(err)}); it speaks MCP ${STATELESS_REVISION} only: set protocol = "auto" or "${STATELESS_REVISION}"`,
    { cause: err, details: { server, protocol: "legacy" } },
  );
}
