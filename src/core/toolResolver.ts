import { getSchemaResult, type SchemaResult } from "../catalog/metaTools.js";
import type { ToolCatalog } from "../catalog/toolCatalog.js";
import type { CatalogTool } from "../catalog/types.js";
import type { Config } from "../config/schema.js";
import { AbridgeError, ErrorCode, isAbridgeError } from "../model/errors.js";
import { clientPrefixedMatches, isClientPrefix, parseToolUri, sanitizeName } from "../model/names.js";
import type { UpstreamPool } from "../upstream/upstreamPool.js";
import { closestNames } from "../util/suggest.js";

/**
 * How much longer than a server's `connect_timeout_ms` a request waits for that server to be
 * ready or failed: the connection's own timer fires first and its error is the better answer.
 */
export const START_WAIT_SLACK_MS = 1_000;

/** Where a name may point: a server and that server's own tool name. */
export interface ToolOrigin {
  server: string;
  tool: string;
}

/**
 * Name resolution: which catalog tool a name a client used means (exposed name, `mcp://` URI,
 * `server/tool`, an exposed name behind a client's own prefix), which server a name points into,
 * and why a name resolves to nothing (a typo, or its server is down). Waiting for a server still
 * making its first connection is part of it: a client served before every upstream was up may
 * name a tool it learned of elsewhere.
 */
export class ToolResolver {
  constructor(
    private readonly catalog: ToolCatalog,
    private readonly pool: UpstreamPool,
    private readonly config: () => Config,
  ) {}

  /**
   * The tool a name refers to: an exposed name, `mcp://server/tool`, `server/tool`, or an exposed
   * name behind the prefix a client added to it (`mcp__abridge__everything_echo`, see
   * {@link clientPrefixedMatches}) when exactly one tool matches that way.
   *
   * @throws AbridgeError TOOL_NOT_FOUND with the closest names (or the several that matched) in the message.
   */
  resolve(name: string): CatalogTool {
    const direct = this.catalog.get(name);
    if (direct) return direct;
    const origin = parseToolUri(name) ?? splitServerTool(name);
    const byOrigin = origin ? this.catalog.find(origin.server, origin.tool) : undefined;
    if (byOrigin) return byOrigin;
    const prefixed = clientPrefixedMatches(name, this.catalog.names());
    const single = prefixed.length === 1 ? this.catalog.get(prefixed[0] as string) : undefined;
    if (single) return single;
    const near = prefixed.length > 1 ? prefixed : closestNames(name, this.catalog.names());
    const hint = prefixed.length > 1 ? `; it ends with the names of several tools, use one of: ` : "; closest: ";
    throw new AbridgeError(ErrorCode.TOOL_NOT_FOUND, `unknown tool "${name}"${near.length > 0 ? `${hint}${near.join(", ")}` : ""}`, {
      details: { tool: name, suggestions: near },
    });
  }

  /**
   * {@link resolve}, but a name that no listed tool has yet, while the server it points into is
   * still making its first connection, waits for that server (at most its `connect_timeout_ms`,
   * whose own timer fails it first). A name that points into no server waits for the `prefix =
   * false` servers still starting, which could own any name.
   */
  async resolveWhenStarted(name: string, signal?: AbortSignal): Promise<CatalogTool> {
    const exact = this.catalog.get(name);
    if (exact) return exact;
    // Any other form (a URI, a client's prefix, a typo) may also be claimed by a `prefix = false`
    // server still starting: resolving it before that server is up could pick one tool where
    // there will be two, so those servers are waited for too.
    const owner = this.serverOfName(name);
    const waitFor = this.config().servers.filter((s) => (s.name === owner || !s.prefix) && this.pool.isStarting(s.name));
    if (waitFor.length > 0) {
      const boundMs = Math.max(...waitFor.map((s) => s.connect_timeout_ms)) + START_WAIT_SLACK_MS;
      await this.pool.waitSettled(
        waitFor.map((s) => s.name),
        boundMs,
        signal,
      );
    }
    return this.resolve(name);
  }

  /**
   * The catalog tool `tool` of `server` (the daemon's and the CLI's form), waiting first for the
   * server when it is still connecting; `undefined` when the catalog has no such tool (the pool
   * then gives the precise reason: filtered, server down).
   *
   * @throws AbridgeError SERVER_NOT_FOUND when no such server is configured.
   */
  async findWhenStarted(server: string, tool: string, signal?: AbortSignal): Promise<CatalogTool | undefined> {
    const found = this.catalog.find(server, tool);
    if (found) return found;
    const config = this.config().servers.find((s) => s.name === server);
    if (!config || !this.pool.status(server)) {
      throw new AbridgeError(ErrorCode.SERVER_NOT_FOUND, `unknown server "${server}"`, { details: { server } });
    }
    // Still connecting: wait for it (its own connect timer ends the wait with the reason).
    if (this.pool.isStarting(server)) await this.pool.waitSettled([server], config.connect_timeout_ms + START_WAIT_SLACK_MS, signal);
    return this.catalog.find(server, tool);
  }

  /** The full original schema and description of a tool (`get_schema`); a down server is named. */
  schema(name: string): SchemaResult {
    try {
      return getSchemaResult(this.resolve(name));
    } catch (err) {
      // A tool of a server that is down is missing for that reason, not because the name is wrong.
      if (isAbridgeError(err, ErrorCode.TOOL_NOT_FOUND)) throw this.unavailableServerError(name) ?? err;
      throw err;
    }
  }

  /** {@link schema}, waiting first for a server that is still starting and owns the name (as a call does). */
  async schemaWhenStarted(name: string, signal?: AbortSignal): Promise<SchemaResult> {
    try {
      return getSchemaResult(await this.resolveWhenStarted(name, signal));
    } catch (err) {
      if (isAbridgeError(err, ErrorCode.TOOL_NOT_FOUND)) throw this.unavailableServerError(name) ?? err;
      throw err;
    }
  }

  /**
   * Every server and tool a name that resolved to no listed tool could have meant: the pool's
   * exposed name (a tool the policy hides), a URI or `server/tool`, and the name read with each
   * server's prefix. The policy decides which of these to refuse by rule rather than call unknown.
   */
  originsOf(name: string): ToolOrigin[] {
    const config = this.config();
    const candidates: ToolOrigin[] = [];
    const exposed = this.pool.resolve(name);
    if (exposed) candidates.push(exposed);
    const origin = parseToolUri(name) ?? splitServerTool(name);
    if (origin) candidates.push(origin);
    for (const server of config.servers) {
      const prefix = `${server.name}${config.separator}`;
      if (!server.prefix) candidates.push({ server: server.name, tool: name });
      else if (name.startsWith(prefix) && name.length > prefix.length) candidates.push({ server: server.name, tool: name.slice(prefix.length) });
    }
    return candidates;
  }

  /**
   * The configured server a name points into: from `mcp://server/tool`, `server/tool`, or the
   * longest `<server><separator>` prefix of the name (with servers `a` and `a_b`, `a_b_x` belongs
   * to `a_b`), also behind a client's own prefix. Names of `prefix = false` servers carry no
   * server: `undefined`.
   */
  serverOfName(name: string): string | undefined {
    const config = this.config();
    const servers = config.servers;
    const origin = parseToolUri(name) ?? splitServerTool(name);
    let server = origin !== undefined && servers.some((s) => s.name === origin.server) ? origin.server : undefined;
    if (server === undefined) {
      for (const candidate of servers) {
        if (!candidate.prefix) continue;
        // Exposed names are sanitized, prefix included (`my.server` -> `my_server_`).
        const prefix = sanitizeName(`${candidate.name}${config.separator}`);
        // Our name as is, or behind a client's own prefix (`mcp__abridge__everything_echo`).
        const at = name.startsWith(prefix) ? 0 : clientPrefixedStart(name, prefix);
        if (at >= 0 && name.length > at + prefix.length && (server === undefined || candidate.name.length > server.length)) server = candidate.name;
      }
    }
    return server;
  }

  /**
   * For a name that no listed tool has but that points into a configured server which is not
   * ready (failed at start, restarting, still connecting, disabled): the error naming that server
   * and why, since its tools are missing only because it is down and "unknown tool" would send the
   * model looking for another name (see {@link serverOfName}).
   */
  unavailableServerError(name: string): AbridgeError | undefined {
    const server = this.serverOfName(name);
    if (server === undefined) return undefined;
    const status = this.pool.status(server);
    if (status === undefined || status.state === "ready") return undefined;
    const why = status.error !== undefined ? `: ${status.error.message}` : "";
    const retryable = status.state !== "disabled" && status.state !== "closed";
    return new AbridgeError(
      ErrorCode.UPSTREAM_UNAVAILABLE,
      `server "${server}" is ${status.state}${why}; "${name}" cannot be called until it is ready${retryable ? " (abridge keeps trying to connect)" : ""}`,
      { retryable, details: { server, tool: name, state: status.state, ...(status.error !== undefined ? { error: status.error } : {}) } },
    );
  }
}

/** Where `prefix` starts in `name` behind a client's own prefix (see {@link isClientPrefix}), or -1. */
function clientPrefixedStart(name: string, prefix: string): number {
  for (let at = name.indexOf(prefix, 1); at > 0; at = name.indexOf(prefix, at + 1)) {
    if (isClientPrefix(name.slice(0, at))) return at;
  }
  return -1;
}

/** `server/tool` split at its first slash, or `undefined` when either side would be empty. */
function splitServerTool(name: string): ToolOrigin | undefined {
  const slash = name.indexOf("/");
  if (slash <= 0 || slash === name.length - 1) return undefined;
  return { server: name.slice(0, slash), tool: name.slice(slash + 1) };
}
