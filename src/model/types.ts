import type { ErrorCode } from "./errors.js";

/** A JSON object as it came off the wire. */
export type JsonObject = { [key: string]: unknown };

/**
 * A tool exactly as the upstream sent it in `tools/list`: unknown keys (`_meta`, `execution`, ...)
 * are kept so that `full` mode and `get_schema` can hand them on untouched.
 */
export interface RawTool {
  name: string;
  title?: string;
  description?: string;
  inputSchema: JsonObject;
  outputSchema?: JsonObject;
  annotations?: {
    title?: string;
    readOnlyHint?: boolean;
    destructiveHint?: boolean;
    idempotentHint?: boolean;
    openWorldHint?: boolean;
    [key: string]: unknown;
  };
  [key: string]: unknown;
}

/** A tool as an MCP client receives it in `tools/list` (what every serving mode renders). */
export interface ListedTool {
  name: string;
  title?: string;
  description?: string;
  inputSchema: Record<string, unknown>;
  outputSchema?: Record<string, unknown>;
  annotations?: Record<string, unknown>;
  [key: string]: unknown;
}

/** A tool together with the server it came from. */
/** The brand only admission writes (see upstream/admitTool.ts); not exported, so no module can spell it without a cast. */
declare const admittedBrand: unique symbol;

/**
 * A tool that passed admission (upstream/admitTool.ts): an object nested no deeper than the schema
 * depth bound, with every `null` member dropped (null means absent), a string `name` and an object
 * `inputSchema`. Upstreams hand out only these, and the catalog, the hasher and the renderers take
 * only these, so none of them checks depth or normalizes again, and a tool that skipped admission
 * does not compile there.
 */
export type AdmittedTool = RawTool & { readonly [admittedBrand]: true };

export interface DiscoveredTool {
  server: string;
  tool: AdmittedTool;
}

/** Connection state of one upstream server. */
export type ServerState = "connecting" | "ready" | "restarting" | "failed" | "closed" | "disabled";

/** What `abridge servers` and the daemon's `stats` show of one upstream. */
export interface ServerStatus {
  name: string;
  transport: "stdio" | "http" | "sse" | "recorded" | "jsonrpc";
  state: ServerState;
  /** Tools exposed after allow/deny filtering. */
  toolCount: number;
  /** When the current connection became ready (ISO 8601). */
  startedAt?: string;
  restarts: number;
  error?: { code: ErrorCode; message: string };
  /** serverInfo from initialize. */
  serverInfo?: { name: string; version: string };
  /** Upstream capabilities from initialize (tools, resources, prompts, ...). */
  capabilities?: JsonObject;
  /** Upstream `instructions` from initialize, if any. */
  instructions?: string;
  /** stderr lines of this server cut for going over the 8 KiB line bound (absent when none was). */
  stderrLinesCut?: number;
}

/** A progress notification of a forwarded call. */
export interface ProgressUpdate {
  progress: number;
  total?: number;
  message?: string;
}

/** Options of a forwarded request. */
export interface CallOptions {
  /** The caller's signal: a proxied request inherits the caller's lifetime. */
  signal?: AbortSignal;
  /** Overrides the server's `timeout_ms`. */
  timeoutMs?: number;
  /** Receives the upstream's progress notifications for this call. */
  onProgress?: (update: ProgressUpdate) => void;
}

/** A `tools/call` result as the upstream sent it (content, structuredContent, isError, _meta...). */
export type CallToolResult = JsonObject & { content?: unknown[] | undefined; isError?: boolean | undefined };

/** A discovered tool with the name and `mcp://` URI it is exposed under. */
export interface ExposedTool extends DiscoveredTool {
  /** Exposed name (`<server><separator><tool>`, sanitized, at most 64 characters). */
  name: string;
  /** `mcp://<server>/<tool>`. */
  uri: string;
}

/** {@link CallOptions} plus the SDK's progress-aware timeout. */
export interface ForwardOptions extends CallOptions {
  /** Restart the timeout on every progress notification (a long job that reports is alive). */
  resetTimeoutOnProgress?: boolean;
  /** Hard ceiling when `resetTimeoutOnProgress` is set. */
  maxTotalTimeoutMs?: number;
  /**
   * The client a `tools/call`, `prompts/get` or `resources/read` comes from, for the upstream's
   * requests and log lines during it.
   * Passed with the call rather than by async context: an `AsyncLocalStorage` in use turns on
   * Node's promise hooks for the whole process, a cost every promise of every call then pays.
   */
  relay?: ClientRelay;
}

/**
 * The client a forwarded call came from, as far as the upstream needs it: where to send the
 * requests (`sampling/createMessage`, `elicitation/create`, `roots/list`) and log lines the
 * upstream makes while the call runs. A front end passes one per call (`BridgeCallOptions.relay`,
 * `ResourceRequestOptions.relay`); the daemon and the CLI pass none, and an upstream's request
 * then gets an error.
 */
export interface ClientRelay {
  /** Identifies the downstream client (one per session): calls of one client may share answers. */
  client: string;
  /** Sends a request to that client, related to the call, and resolves with its answer. */
  request(method: string, params: JsonObject, signal: AbortSignal): Promise<JsonObject>;
  /** Sends a notification to that client, related to the call. */
  notify(method: string, params: JsonObject): void;
}

/** A notification from an upstream that no single call owns (resources/updated, list_changed, logs). */
export interface UpstreamNotification {
  method: string;
  params: JsonObject;
}
