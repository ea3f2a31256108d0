/**
 * Which edits of a server's config the upstream pool applies in place and which need a new
 * connection. Kept apart from `upstreamPool.ts` because the list is a contract with the config
 * schema: a field added there must be placed here on one side or the other, and a reader should
 * find that choice in one short module.
 */
import type { ServerConfig } from "../config/schema.js";

/**
 * Server settings a running connection does not depend on: they are re-read on every call
 * (timeouts), applied by the pool to the last listed tools (allow/deny through `exposes`, prefix), or enforced
 * above the pool (`CallGuard`: read_only, destructive, output limit, spill; the call pipeline: result shaping). Editing only these
 * must not restart the server and kill its calls in flight.
 */
const LIVE_FIELDS = [
  "allow",
  "deny",
  "prefix",
  "timeout_ms",
  "connect_timeout_ms",
  "read_only",
  "destructive",
  "max_output_bytes",
  "spill",
  "result_format",
  "result_format_tools",
  "structured",
] as const;

/** The part of a server's config that needs a new process (or connection) when it changes. */
export function connectionShape(config: ServerConfig): string {
  const shape: Partial<ServerConfig> = { ...config };
  for (const field of LIVE_FIELDS) delete shape[field];
  return JSON.stringify(shape);
}
