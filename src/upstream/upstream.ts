import type { ServerConfig } from "../config/schema.js";
import type { ErrorCode } from "../model/errors.js";
import type { AdmittedTool, CallToolResult, ForwardOptions, JsonObject, ServerStatus } from "../model/types.js";

/**
 * One configured server as the pool sees it, whatever runs behind it: a live MCP server
 * (mcp/upstreamConnection.ts), a JSON-RPC backend described by manifests
 * (jsonrpc/jsonRpcUpstream.ts) or a recorded tool list with nothing behind it
 * (recorded/recordedUpstream.ts). The pool and everything above it hold upstreams only through
 * this interface, so a new kind is one class and one line in upstreamFactory.ts; what only some
 * kinds can do is a member every kind answers (a kind without it says so: `[]`, `undefined`,
 * `false`, or a refusal with a stable error code) rather than a check of the concrete class.
 */
export interface Upstream {
  /** The server's name, as configured. */
  readonly name: string;
  /** The server's config entry as the upstream holds it now (replaced by {@link updateConfig}). */
  readonly config: ServerConfig;
  /**
   * Whether resource subscriptions sent to this upstream are forgotten when it goes away and comes
   * back (a restarted process, a new session), so the pool must send them again each time it turns
   * ready. False for the kinds that have no resources at all.
   */
  readonly resubscribeOnReady: boolean;

  /** Connects (or reads its file) and lists tools. Never rejects: a failure shows in {@link status}. Idempotent. */
  start(signal?: AbortSignal): Promise<void>;
  /**
   * A mistake in the config found while starting that fails the whole pool's start rather than
   * only this server (the pool acts on `CONFIG_INVALID`): a recorded file or a manifests folder
   * that cannot be read. `undefined` when there is none, and always for a kind whose start
   * failures only mark the server failed and are retried.
   */
  startError(): { code: ErrorCode; message: string } | undefined;
  /** Lists the tools again now; the pool hears of a changed list through its `onToolsChanged`. */
  refresh(): Promise<void>;
  /**
   * Takes a config entry that differs only in settings a running connection does not depend on
   * (filters, prefix, timeouts, policy); true when the exposed tool list changed.
   */
  updateConfig(config: ServerConfig): boolean;
  /** Ends the connection and any process; calls in flight fail. Idempotent. */
  close(): Promise<void>;

  /** The current status (a fresh object). */
  status(): ServerStatus;
  /** The exposed tools (allow/deny applied), in the server's order. */
  tools(): AdmittedTool[];
  /** Pids of the child processes alive under this upstream (`[]` for kinds that start none). */
  pids(): number[];

  /** Calls a tool by its upstream name; an `isError` result is returned, not thrown. */
  callTool(tool: string, args: JsonObject | undefined, options?: ForwardOptions): Promise<CallToolResult>;
  /**
   * Sends any other request (`resources/read`, `prompts/get`, ...) and returns the result as
   * sent; a kind without the capability refuses it with a stable error code.
   */
  request(method: string, params: JsonObject | undefined, options?: ForwardOptions): Promise<JsonObject>;
  /** Every item of a paginated list (`resources/list`, `prompts/list`, ...); `[]` without the capability. */
  listAll(method: string, key: string, options?: ForwardOptions): Promise<JsonObject[]>;
  /** The server's own tool list before allow/deny, as `abridge record` writes it. */
  recordTools(options?: ForwardOptions): Promise<JsonObject[]>;
}
