import { z } from "zod";
import { MODES } from "../../../config/schema.js";

/**
 * What the daemon's answers carry: tools, results, runs, schemas and counters. Objects a later
 * version may grow (results, stats) are loose: fields a client does not know pass through untouched.
 */

const jsonObject = z.record(z.string(), z.unknown());

/** One tool as `list_tools` returns it: what a host needs to show it and to route a call. */
export const daemonToolSchema = z.object({
  server: z.string(),
  /** The upstream's own tool name (what `call_tool` and `get_schema` take). */
  name: z.string(),
  /** `mcp://<server>/<tool>`. */
  uri: z.string(),
  /** The exposed name (`<server>_<tool>`), safe as a function name for model APIs. */
  exposedName: z.string(),
  description: z.string(),
  /** The tool's input schema in the requested mode (a minimal one in `compact`). */
  parameters: jsonObject,
  annotations: jsonObject.optional(),
});
/** One tool as `list_tools` returns it. */
export type DaemonTool = z.infer<typeof daemonToolSchema>;

/** A tool call's result as the upstream (or the output limits) made it: MCP's `CallToolResult`. */
export const toolResultSchema = z.looseObject({
  content: z.array(z.unknown()).optional(),
  isError: z.boolean().optional(),
});

/** What a `run_code` run produced (the runtime's `CodeRunResult`); codes a client does not know pass. */
export const runResultSchema = z.looseObject({
  runId: z.string(),
  ok: z.boolean(),
  console: z.array(z.looseObject({ level: z.string(), text: z.string() })),
  consoleDropped: z.number().int().nonnegative(),
  returnJson: z.string().optional(),
  error: z.looseObject({ code: z.string(), message: z.string() }).optional(),
  calls: z.array(z.looseObject({ tool: z.string(), ok: z.boolean(), code: z.string().optional(), ms: z.number() })),
  durationMs: z.number(),
  /** Set when the console lines and the return value were left out to keep the answer within its line or message. */
  cut: z.boolean().optional(),
});

/** What a `run_code` run produced. */
export type DaemonRunResult = z.infer<typeof runResultSchema>;

/** A run's result as the runtime makes it (`CodeRunResult`), described here so the wire needs no runtime code. */
interface RunResultLike {
  console: readonly { level: string; text: string }[];
  calls: readonly { tool: string; ok: boolean; code?: string; ms: number }[];
  error?: { code: string; message: string } | undefined;
  runId: string;
  ok: boolean;
  consoleDropped: number;
  returnJson?: string;
  durationMs: number;
}

/**
 * A run's result as the wire's open objects take it: plain copies of its parts (interfaces have no
 * index signature). Past `maxBytes` of JSON, its console lines and return value are left out
 * (`cut: true`, the lines counted in `consoleDropped`): a program may print megabytes, and the
 * answer must still fit in a line or a message. The answer text beside it holds them, cut at
 * `max_output_bytes`.
 */
export function wireRun(result: RunResultLike, maxBytes = Number.POSITIVE_INFINITY): DaemonRunResult {
  const { error, console: lines, calls, ...rest } = result;
  const run = {
    ...rest,
    console: lines.map((line) => ({ ...line })),
    calls: calls.map((call) => ({ ...call })),
    ...(error !== undefined ? { error: { ...error } } : {}),
  };
  if (!Number.isFinite(maxBytes) || Buffer.byteLength(JSON.stringify(run)) <= maxBytes) return run;
  const { returnJson: _left, ...kept } = run;
  return { ...kept, console: [], consoleDropped: run.consoleDropped + lines.length, cut: true };
}

/** What `get_schema` answers: the tool's full, original schema and description. */
export const toolSchemaSchema = z.object({
  /** The exposed name. */
  name: z.string(),
  server: z.string(),
  uri: z.string(),
  /** The upstream's original description. */
  description: z.string().optional(),
  /** The upstream's original, full input schema. */
  inputSchema: jsonObject,
  outputSchema: jsonObject.optional(),
  annotations: jsonObject.optional(),
});
/** The `schema` of a `get_schema` answer. */
export type DaemonToolSchema = z.infer<typeof toolSchemaSchema>;

/** One server's counts of a `refresh`. */
export const discoverySchema = z.object({
  server: z.string(),
  tools: z.number(),
  /** Tools whose summary came from the cache. */
  hits: z.number(),
  /** Tools without a usable summary: a summary job was queued. */
  queued: z.number(),
});
/** One server's counts of a `refresh`. */
export type DaemonDiscovery = z.infer<typeof discoverySchema>;

const count = z.number().int().nonnegative();

/** One upstream in `stats`: its state, tool count and the last error. */
export const upstreamStatusSchema = z.looseObject({
  name: z.string(),
  transport: z.string(),
  /** `connecting`, `ready`, `failed`, ... */
  state: z.string(),
  toolCount: count,
  restarts: count,
  startedAt: z.string().optional(),
  error: z.looseObject({ code: z.string(), message: z.string() }).optional(),
});

/** What `stats` answers: the bridge's counters and the daemon's own. */
export const daemonStatsSchema = z.looseObject({
  version: z.string(),
  uptimeMs: z.number(),
  upstreams: z.array(upstreamStatusSchema),
  catalog: z.looseObject({ tools: count, summarized: count, hits: count, misses: count }),
  queue: z.looseObject({ queued: count, running: count }),
  cache: z.looseObject({ entries: count, invalidLines: count, writeErrors: count }),
  calls: z.looseObject({ total: count, failed: count, invalidArguments: count, inFlight: count }),
  pid: z.number().int(),
  address: z.string(),
  started: z.string(),
  /** Summary jobs waiting or running. */
  queueDepth: count,
  /** Tokens of the configured mode's list against full mode's (`saved` may be negative). */
  tokens: z.looseObject({ mode: z.enum(MODES), full: z.number(), current: z.number(), saved: z.number(), ratioOfFull: z.number() }),
  /** The config file the daemon serves (absent when it could not be read at start). */
  config: z.looseObject({ path: z.string(), hash: z.string() }).optional(),
  daemon: z.looseObject({
    connections: count,
    requests: count,
    refused: count,
    badRequests: count,
    evicted: count,
    openConnections: count,
    activeRequests: count,
    idleTimeoutMs: z.number(),
    bufferedBytes: count,
    peakBufferedBytes: count,
    pausedConnections: count,
  }),
  /** Per server, the call timeout the daemon applies. */
  timeoutsMs: z.record(z.string(), z.number()),
  /** Per server, how long a request may wait for it to start. */
  connectTimeoutsMs: z.record(z.string(), z.number()),
  /** A `run_code` run's time limit unless its request says otherwise (`[code] timeout_ms`). */
  codeTimeoutMs: z.number().optional(),
});
/** The `stats` of a `stats` answer. */
export type DaemonStats = z.infer<typeof daemonStatsSchema>;
