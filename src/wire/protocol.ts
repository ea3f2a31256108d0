import { z } from "zod";
import { MODES } from "../config/schema.js";
import type { ErrorCode } from "../model/errors.js";

/**
 * The daemon's wire protocol (see DESIGN.md "Daemon protocol"): one JSON object per line in each
 * direction, answered in order. Shared by the daemon and its client, so this module imports no
 * daemon code and the library can use it without pulling the daemon in.
 */

/** Longest request or response line the daemon accepts (16 MiB), newline excluded. */
export const MAX_LINE_BYTES = 16 * 1024 * 1024;

/** An `id` the client may attach to a request; echoed back in its response. */
export const requestIdSchema = z.union([z.string().max(200), z.number().finite(), z.null()]);
export type RequestId = z.infer<typeof requestIdSchema>;

const common = {
  /** The token from the lockfile: proves the caller can read the 0600 file. */
  token: z.string(),
  id: requestIdSchema.optional(),
};
const name = z.string().min(1).max(1000);

/**
 * Every request the daemon understands. Objects are strict so a typo (`arguments` for `args`)
 * is reported instead of silently calling the tool with no arguments.
 */
export const daemonRequestSchema = z.discriminatedUnion("op", [
  z.strictObject({ op: z.literal("list_tools"), mode: z.enum(MODES).optional(), ...common }),
  z.strictObject({
    op: z.literal("call_tool"),
    server: name,
    tool: name,
    args: z.record(z.string(), z.unknown()).optional(),
    /** Overrides the server's `timeout_ms` for this call. */
    timeout_ms: z.number().int().positive().max(24 * 3_600_000).optional(),
    /** How arguments are validated (the mode the caller showed the model); default the config's. */
    mode: z.enum(MODES).optional(),
    ...common,
  }),
  z.strictObject({ op: z.literal("get_schema"), server: name, tool: name, ...common }),
  z.strictObject({
    op: z.literal("read_output"),
    /** The handle a cut `call_tool` result names (servers with `spill = true`). */
    handle: z.string().min(1).max(1000),
    /** Byte offset to read from, as the result's marker tells (default 0). */
    offset: z.number().int().nonnegative().optional(),
    ...common,
  }),
  z.strictObject({ op: z.literal("stats"), ...common }),
  z.strictObject({ op: z.literal("refresh"), ...common }),
  z.strictObject({ op: z.literal("shutdown"), ...common }),
]);

/** A validated request. */
export type DaemonRequest = z.infer<typeof daemonRequestSchema>;
/** The operation names. */
export type DaemonOp = DaemonRequest["op"];

/** One tool as `list_tools` returns it: what a host needs to show it and to route a call. */
export interface DaemonTool {
  server: string;
  /** The upstream's own tool name (what `call_tool` and `get_schema` take). */
  name: string;
  /** `mcp://<server>/<tool>`. */
  uri: string;
  /** The exposed name (`<server>_<tool>`), safe as a function name for model APIs. */
  exposedName: string;
  description: string;
  /** The tool's input schema in the requested mode (a minimal one in `compact`). */
  parameters: Record<string, unknown>;
  annotations?: Record<string, unknown>;
}

/** The error part of a failed response. */
export interface WireError {
  code: ErrorCode;
  message: string;
  retryable: boolean;
}

/** A response line. */
export type DaemonResponse = ({ ok: true } & Record<string, unknown>) | { ok: false; error: WireError; id?: RequestId };

/** Reads the `id` of a parsed line before validation, so even a rejected request gets it back. */
export function requestIdOf(value: unknown): RequestId | undefined {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return undefined;
  const parsed = requestIdSchema.safeParse((value as Record<string, unknown>).id);
  return parsed.success ? parsed.data : undefined;
}

/** A daemon address: `127.0.0.1:<port>` or `unix:<path>`. */
export type DaemonAddress = { kind: "tcp"; host: string; port: number } | { kind: "unix"; path: string };

/** Formats an address for the lockfile. */
export function formatAddress(address: DaemonAddress): string {
  return address.kind === "unix" ? `unix:${address.path}` : `${address.host}:${address.port}`;
}

/** Parses a lockfile address; undefined when malformed. */
export function parseAddress(text: string): DaemonAddress | undefined {
  if (text.startsWith("unix:")) {
    const path = text.slice("unix:".length);
    return path === "" ? undefined : { kind: "unix", path };
  }
  const colon = text.lastIndexOf(":");
  if (colon <= 0) return undefined;
  const port = Number(text.slice(colon + 1));
  if (!Number.isInteger(port) || port <= 0 || port > 65_535) return undefined;
  return { kind: "tcp", host: text.slice(0, colon), port };
}
