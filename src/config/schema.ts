import { z } from "zod";
import { parseBackendAddress } from "./backendAddress.js";
import { parseRedisUrl } from "./redisUrl.js";
import { RESULT_FORMATS, STRUCTURED_MODES, type ResultFormat } from "../result/resultFormat.js";

/**
 * The config file's schema. Field names mirror the file (snake_case) so an error path such as
 * `servers.github.timeout_ms` is exactly what the user typed. `.describe()` texts feed docs/configuration.md's
 * config reference.
 */

export const MODES = ["full", "summary", "compact", "lazy", "auto", "code"] as const;
export const modeSchema = z.enum(MODES).describe("How tools are presented to the model");
export type Mode = z.infer<typeof modeSchema>;

/** A server's name is part of tool names, cache keys (`server:tool:hash`) and `mcp://` URIs. */
export const SERVER_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;

const globList = z.array(z.string().min(1)).describe("Glob patterns of tool names (`*` and `?`)");
const positiveMs = z.number().int().positive();

/** Permission and output settings a server inherits from the top level unless it sets its own. */
const policyFields = {
  read_only: z.boolean().optional().describe("Expose and allow only tools annotated readOnlyHint: true"),
  destructive: z.enum(["allow", "deny"]).optional().describe("`deny` hides and refuses tools annotated destructiveHint: true"),
  sandbox: z.enum(["none", "bwrap"]).optional().describe("Run stdio servers under bubblewrap"),
  max_output_bytes: z.number().int().positive().optional().describe("Largest tool result passed on"),
  spill: z.boolean().optional().describe("Keep results over max_output_bytes behind a read_output handle"),
  result_format: z
    .enum(RESULT_FORMATS)
    .optional()
    .describe(
      "How JSON in tool results reaches the model: `as-is` as the upstream wrote it, `compact` minified with arrays of like objects as tables (lossless), `lean` compact less null and empty fields (said in the result)",
    ),
};

export const serverSchema = z
  .strictObject({
    type: z.enum(["stdio", "http", "sse"]).optional().describe("Transport; inferred from command/url"),
    command: z
      .string()
      .min(1)
      .optional()
      .describe("Executable of a stdio server; a relative path (`./server.sh`) is taken from the config file's folder, a bare name (`npx`) from PATH"),
    args: z.array(z.string()).default([]).describe("Arguments of a stdio server"),
    env: z.record(z.string(), z.string()).default({}).describe("Extra environment of a stdio server"),
    cwd: z
      .string()
      .min(1)
      .optional()
      .describe(
        'Working directory of a stdio server; default: the config file\'s folder, under serve, the CLI and the daemon alike (not with sandbox = "bwrap")',
      ),
    // http(s) only: z.url() alone accepts `file:` or `mailto:`, which no MCP transport can use.
    url: z
      .url({ protocol: /^https?$/ })
      .optional()
      .describe("Endpoint of an HTTP (streamable) or SSE server"),
    headers: z.record(z.string(), z.string()).default({}).describe("HTTP headers sent to a url server"),
    recorded: z
      .string()
      .min(1)
      .optional()
      .describe(
        "A recorded tools/list answer (JSON file, e.g. from `abridge record`; relative to the config file) served instead of a live server: listed, searched and described like any server, calls refused",
      ),
    jsonrpc: z
      .string()
      .min(1)
      .optional()
      .describe(
        "A JSON-RPC 2.0 backend (newline-delimited) put behind MCP: `unix:/path/to.sock` (a relative path is taken from the config file's folder) or `tcp:127.0.0.1:PORT`; its tools come from `manifests`",
      ),
    manifests: z
      .string()
      .min(1)
      .optional()
      .describe(
        "With jsonrpc: folder of manifest files (every `*.json` below it, relative to the config file) naming the backend's tools and the method each one calls; watched, an edit re-lists the server",
      ),
    allow: globList.optional().describe("Only tools matching one of these globs are exposed"),
    deny: globList.default([]).describe("Tools matching one of these globs are hidden and refused"),
    timeout_ms: positiveMs.default(30_000).describe("Per-call timeout"),
    connect_timeout_ms: positiveMs.default(15_000).describe("Timeout of start-up and initialize"),
    max_pending_requests: z
      .number()
      .int()
      .min(1)
      .max(1_000_000)
      .default(1_000)
      .describe(
        "Requests to this server at once, answered or not yet written (a server that stops reading its stdin); past it a call fails at once with UPSTREAM_BUSY (retryable)",
      ),
    enabled: z.boolean().default(true).describe("false keeps the entry but does not connect"),
    prefix: z.boolean().default(true).describe("false exposes tools under their own names"),
    sandbox_network: z.boolean().default(false).describe("Allow network inside the bwrap sandbox"),
    sandbox_write: z.array(z.string()).default([]).describe("Paths writable inside the bwrap sandbox"),
    sandbox_read: z
      .array(z.string())
      .default([])
      .describe("Paths under /tmp shown read-only inside the bwrap sandbox, whose own /tmp is empty (a server installed under /tmp)"),
    lifecycle: z.enum(["persistent", "per_call"]).default("persistent").describe("`per_call` starts a fresh process for each call"),
    protocol: z
      .enum(["auto", "2026-07-28", "legacy"])
      .default("auto")
      .describe(
        "MCP revision spoken to the server: `auto` probes with server/discover and falls back to initialize; `2026-07-28` is stateless only (no initialize, an error if the server lacks it); `legacy` is the initialize handshake only (no probe)",
      ),
    result_format_tools: z
      .record(z.string().min(1), z.enum(RESULT_FORMATS))
      .default({})
      .describe("Tool name or glob (`*`, `?`) -> result_format for those tools; a name beats the globs, the first matching glob wins"),
    structured: z
      .enum(STRUCTURED_MODES)
      .default("both")
      .describe("`text-only` drops structuredContent when a text block only repeats it (for clients that show both to the model); `both` passes both on"),
    ...policyFields,
  })
  .superRefine((server, ctx) => {
    // A JSON-RPC backend is reached through its socket and described by its manifests: a process or
    // an endpoint beside it would be ignored, and without manifests it would have no tools.
    if (server.jsonrpc !== undefined) {
      for (const key of ["type", "command", "url", "recorded"] as const) {
        if (server[key] !== undefined) {
          ctx.addIssue({ code: "custom", path: [key], message: `expected no ${key} on a jsonrpc server (jsonrpc replaces the MCP server)` });
        }
      }
      if (parseBackendAddress(server.jsonrpc) === undefined) {
        ctx.addIssue({ code: "custom", path: ["jsonrpc"], message: `expected "unix:/path/to.sock" or "tcp:HOST:PORT", got ${JSON.stringify(server.jsonrpc)}` });
      }
      if (server.manifests === undefined) {
        ctx.addIssue({ code: "custom", path: ["manifests"], message: "expected a manifests folder beside jsonrpc, got nothing" });
      }
      return;
    }
    if (server.manifests !== undefined) {
      ctx.addIssue({ code: "custom", path: ["manifests"], message: "expected manifests only beside jsonrpc (they describe a JSON-RPC backend's tools)" });
    }
    // A recorded server has no process or endpoint: a transport beside it would be ignored.
    if (server.recorded !== undefined) {
      for (const key of ["type", "command", "url"] as const) {
        if (server[key] !== undefined) {
          ctx.addIssue({ code: "custom", path: [key], message: `expected no ${key} on a recorded server (recorded replaces the live server)` });
        }
      }
      return;
    }
    // Neither type nor a single transport key: the intent is unclear, so say so once rather than
    // guessing a transport and then complaining about the other key.
    if (server.type === undefined && server.command !== undefined && server.url !== undefined) {
      ctx.addIssue({
        code: "custom",
        path: [],
        message: "expected either command (a stdio server) or url (an HTTP/SSE server), got both",
      });
      return;
    }
    const kind = server.type ?? (server.url !== undefined ? "http" : "stdio");
    const label = kind === "http" ? "an http" : kind === "sse" ? "an sse" : "a stdio";
    if (kind === "stdio") {
      if (server.command === undefined) {
        ctx.addIssue({ code: "custom", path: ["command"], message: "expected a command for a stdio server, got nothing" });
      }
      if (server.url !== undefined) {
        ctx.addIssue({ code: "custom", path: ["url"], message: 'expected no url on a stdio server (set type = "http" or drop command)' });
      }
    } else {
      if (server.url === undefined) {
        ctx.addIssue({ code: "custom", path: ["url"], message: `expected a url for ${label} server, got nothing` });
      }
      if (server.command !== undefined) {
        ctx.addIssue({ code: "custom", path: ["command"], message: `expected no command on ${label} server` });
      }
    }
  });

export type ServerFileConfig = z.infer<typeof serverSchema>;

/** `protocol` of a server entry: which MCP revisions abridge tries with it. */
export type ServerProtocol = NonNullable<ServerFileConfig["protocol"]>;

export const summarySchema = z
  .strictObject({
    summarizer: z.enum(["extractive", "openai"]).default("extractive").describe("Who writes summaries"),
    model: z.string().min(1).default("gpt-4o-mini").describe("Model name for the openai summarizer"),
    base_url: z
      .url({ protocol: /^https?$/ })
      .optional()
      .describe("OpenAI-compatible endpoint, e.g. http://127.0.0.1:11434/v1"),
    api_key_env: z.string().min(1).default("OPENAI_API_KEY").describe("Environment variable holding the key"),
    timeout_ms: positiveMs.default(60_000).describe("Timeout of one summarizer request"),
    max_concurrency: z.number().int().min(1).max(64).default(4).describe("Summarizer requests at once"),
    requests_per_minute: z.number().int().positive().optional().describe("Rate limit of summarizer requests"),
    max_requests: z.number().int().nonnegative().optional().describe("Spend cap: summarizer requests per process"),
    max_retries: z.number().int().min(0).max(10).default(4).describe("Retries on 429/5xx/timeouts"),
    batch_size: z.number().int().min(1).max(50).default(8).describe("Tools of one server per request"),
    word_budget: z.number().int().min(4).max(200).default(24).describe("Word budget of an extractive summary"),
  })
  .describe("How tool summaries are written");

export type SummaryConfig = z.infer<typeof summarySchema>;

/** `[code]`: the limits of one program `run_code` runs (see src/code/runtime/codeLimits.ts for their bounds). */
export const codeSchema = z
  .strictObject({
    timeout_ms: z
      .number()
      .int()
      .min(1)
      .max(86_400_000)
      .default(30_000)
      .describe("A program's wall-clock time, calls included; past it the run ends with CODE_TIMEOUT"),
    memory_mb: z.number().int().min(1).max(1024).default(64).describe("Heap of a program's JavaScript engine; past it the run ends with CODE_MEMORY"),
    max_calls: z.number().int().min(1).max(1_000_000).default(1_000).describe("Tool calls one program may make; the next one throws CODE_LIMIT in the program"),
    max_concurrent_calls: z.number().int().min(1).max(1_000).default(8).describe("Tool calls of one program in flight at once; more wait"),
  })
  .describe("Limits of the programs `run_code` runs (code mode, the daemon, the bus, `abridge run`)");

export type CodeConfig = z.infer<typeof codeSchema>;

export const configFileSchema = z.strictObject({
  mode: modeSchema.default("compact"),
  separator: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,3}$/, "expected 1 to 3 of A-Z a-z 0-9 _ -")
    .default("_")
    .describe("Between server and tool in exposed names"),
  idle_timeout_minutes: z.number().positive().default(5).describe("Daemon exits after this long idle"),
  startup_grace_ms: z
    .number()
    .int()
    .min(0)
    .max(600_000)
    .default(3_000)
    .describe("How long after start a tools/list waits for upstreams still starting; later ones are announced with list_changed"),
  cache_dir: z.string().min(1).optional().describe("Where summaries.jsonl lives"),
  cache_url: z
    .string()
    .superRefine((value, ctx) => {
      const parsed = parseRedisUrl(value);
      if (!parsed.ok) ctx.addIssue({ code: "custom", message: parsed.message });
    })
    .optional()
    .describe(
      "Summary cache on Redis, shared by every bridge of a fleet: `redis://[:password@]host[:port][/db]` (a password as `${VAR}`); unset: summaries.jsonl in cache_dir",
    ),
  cache_lease_ms: z
    .number()
    .int()
    .min(100)
    .max(3_600_000)
    .default(30_000)
    .describe("cache_url: how long a host's claim on a summary lasts unless renewed; a host that dies mid-job holds the others back this long"),
  state_dir: z.string().min(1).optional().describe("Where the daemon lockfile and spilled outputs live"),
  log_level: z
    .enum(["debug", "info", "warn", "error", "silent"])
    .optional()
    .describe("Log verbosity on stderr (unset: warn); `--log-level` and $ABRIDGE_LOG_LEVEL override it"),
  audit_log: z.string().min(1).optional().describe("JSONL audit log of every call"),
  audit_arguments: z.boolean().default(false).describe("Write argument values into the audit log"),
  token_budget: z
    .number()
    .int()
    .positive()
    .default(8_000)
    .describe(
      'mode = "auto": o200k tokens the tool list may cost; the richest view that fits is served (full, summary, compact), else lazy plus as many pinned and most-called tools as fit',
    ),
  pin: globList.default([]).describe('mode = "auto": globs (`*`, `?`) of exposed tool names listed first when not every tool fits'),
  auto_update_minutes: z
    .number()
    .positive()
    .default(60)
    .describe('mode = "auto": call counts change which tools are listed at most this often, so the list stays byte-stable for prompt caches'),
  compact_schema: z
    .enum(["none", "names", "types"])
    .default("none")
    .describe(
      'Input schema compact lists beside the parameter line: `none` ({type: "object"}), `names` (property names, empty schemas), `types` (names, types, short enums)',
    ),
  http_session_idle_minutes: z
    .number()
    .positive()
    .default(30)
    .describe("`serve --http` closes a session with no request in flight for this long, ending its GET stream if one is open (its client re-initializes)"),
  http_max_sessions: z.number().int().positive().default(1000).describe("`serve --http` sessions open at once; past it initialize gets 503 with Retry-After"),
  http_max_calls_per_session: z
    .number()
    .int()
    .min(1)
    .max(100_000)
    .default(64)
    .describe(
      "`serve --http` requests of one session that reach the upstreams at once (calls, reads, prompts); past it a call is answered at once with a retryable busy error",
    ),
  http_max_connections: z
    .number()
    .int()
    .min(1)
    .max(1_000_000)
    .default(512)
    .describe(
      "`serve --http` connections open at once that passed the token and Host checks; past it a request gets 503 and its connection is closed (connections without the token: at most 64 besides)",
    ),
  bus_max_concurrent: z
    .number()
    .int()
    .min(1)
    .max(10_000)
    .default(64)
    .describe("`abridge bus`: calls one worker runs at once (`--max-concurrent`); past it calls wait, one requester taking at most seven eighths of them"),
  bus_max_queued: z
    .number()
    .int()
    .min(0)
    .max(100_000)
    .default(256)
    .describe(
      "`abridge bus`: calls waiting for a worker's slot (`--max-queued`); past it a call is answered `busy` (retryable), the requester holding the most of the queue first",
    ),
  bus_refresh_interval_ms: z
    .number()
    .int()
    .min(0)
    .max(600_000)
    .default(1_000)
    .describe("`abridge bus`: refresh requests make at most one re-list and publish per this long per worker; those that arrive meanwhile share the next"),
  ...policyFields,
  summary: summarySchema.prefault({}),
  code: codeSchema.prefault({}),
  servers: z
    .record(z.string().regex(SERVER_NAME_PATTERN, "expected a name of A-Z a-z 0-9 _ . - starting with a letter or digit"), serverSchema)
    .default({})
    .describe("The upstream MCP servers"),
});

export type ConfigFile = z.infer<typeof configFileSchema>;

/** A server after loading: its name, its resolved transport and the inherited policy filled in. */
export interface ServerConfig extends Omit<ServerFileConfig, "type" | "protocol" | keyof typeof policyFields> {
  name: string;
  /** The MCP revision spoken to the server (see serverSchema); absent means `auto`. */
  protocol?: ServerProtocol;
  /**
   * `recorded`: tools come from the file `recorded` (an absolute path after loading); `jsonrpc`:
   * from the manifests under `manifests` (absolute after loading), calls go to the socket `jsonrpc`.
   */
  transport: "stdio" | "http" | "sse" | "recorded" | "jsonrpc";
  read_only: boolean;
  destructive: "allow" | "deny";
  sandbox: "none" | "bwrap";
  max_output_bytes: number;
  spill: boolean;
  result_format: ResultFormat;
}

/** The loaded, validated configuration. */
export interface Config extends Omit<ConfigFile, "servers"> {
  /** Absolute path of the file it came from, or `"<built-in>"`. */
  source: string;
  /** Servers in name order (enabled and disabled). */
  servers: ServerConfig[];
  /** Server names in the order the file lists them: when tool names collide, the first keeps its name. */
  serverOrder?: string[];
}

export const DEFAULT_MAX_OUTPUT_BYTES = 200_000;
