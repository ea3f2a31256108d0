import type { CallCounts } from "../cache/callCounts.js";
import { callMetaTool, getSchemaResult, servesMetaTool, type DeclarationRequest, type MetaToolHost } from "../catalog/metaTools.js";
import type { SearchResult } from "../catalog/searchIndex.js";
import type { ToolCatalog } from "../catalog/toolCatalog.js";
import type { CatalogTool } from "../catalog/types.js";
import type { Config } from "../config/schema.js";
import { AbridgeError, ErrorCode } from "../model/errors.js";
import type { CallToolResult, JsonObject } from "../model/types.js";
import type { CallGuard } from "../policy/callGuard.js";
import type { BridgeCallOptions } from "../policy/callOptions.js";
import { shapeCallResult } from "../result/shapeCallResult.js";
import { deeperThan, MAX_SCHEMA_DEPTH, nestingDepth } from "../upstream/schemaDepth.js";
import type { UpstreamPool } from "../upstream/upstreamPool.js";
import type { ToolResolver } from "./toolResolver.js";

export type { BridgeCallOptions } from "../policy/callOptions.js";

/** Call counters of `stats`. */
export interface CallCounters {
  total: number;
  failed: number;
  invalidArguments: number;
  inFlight: number;
}

/** What a {@link CallPipeline} works with. */
export interface CallPipelineParts {
  pool: UpstreamPool;
  catalog: ToolCatalog;
  guard: CallGuard;
  callCounts: CallCounts;
  resolver: ToolResolver;
  /** The config in force (a reload replaces it). */
  config: () => Config;
  /** Lists wait for upstreams still starting (`search_tools` is listing). */
  waitReady: (graceMs: number, signal?: AbortSignal) => Promise<boolean>;
  /** The code view (code mode's `search_tools` and `run_code`). */
  code: () => CodeAccess;
}

/** What the call pipeline asks of the code view. */
export interface CodeAccess {
  declare(request: DeclarationRequest, signal?: AbortSignal): Promise<string>;
  run(code: string, options: BridgeCallOptions): Promise<{ answer: CallToolResult }>;
}

/**
 * Refuses `args` that nest deeper than {@link MAX_SCHEMA_DEPTH} levels (or contain a cycle): no
 * tool's schema may nest deeper, and arguments thousands of levels deep exist only to overflow
 * the stack of whatever walks them (`JSON.stringify` on the way to the server, the validator, the
 * audit log).
 *
 * @throws AbridgeError INPUT_INVALID naming the depth and the limit.
 */
export function assertArgumentsDepth(tool: string, args: JsonObject | undefined): void {
  if (args === undefined || !deeperThan(args, MAX_SCHEMA_DEPTH)) return;
  const depth = nestingDepth(args);
  const what = depth === "cycle" ? "contain a cycle" : `nest ${depth} levels deep`;
  throw new AbridgeError(ErrorCode.INPUT_INVALID, `the arguments of ${tool} ${what}; the limit is ${MAX_SCHEMA_DEPTH} levels. The call was not forwarded.`, {
    details: { tool, depth, limit: MAX_SCHEMA_DEPTH },
  });
}

/**
 * What a program's call reads of a result: a program gets `structuredContent` when there is one
 * (see `toolResultValue`), so the text beside it is left out; otherwise a server that sends its
 * answer twice (text and structured) would meet the output limit at half the size a direct call does.
 */
function programView(result: CallToolResult): CallToolResult {
  if (result.structuredContent === undefined || result.structuredContent === null || result.isError === true) return result;
  return { ...result, content: [] };
}

/**
 * The way of every tool call, one step after the other: arguments nested too deep are refused
 * before anything walks them; meta-tools are answered here; any other name is resolved (a name
 * the policy hides gets the refusal naming its rule), arguments are validated in the modes where
 * the model saw no full schema, then the permission gate, the upstream call, trust marking and
 * output limit; every outcome is audited and counted.
 */
export class CallPipeline {
  private readonly counters: CallCounters = { total: 0, failed: 0, invalidArguments: 0, inFlight: 0 };

  constructor(private readonly parts: CallPipelineParts) {}

  /** A copy of the call counters. */
  stats(): CallCounters {
    return { ...this.counters };
  }

  /**
   * Calls a tool by the name the client was shown, meta-tools included. Argument errors in
   * `compact`/`lazy` come back as a tool error carrying the full schema, so the model can correct
   * itself in one step; upstream tool errors stay tool results.
   */
  async callTool(name: string, args: JsonObject | undefined, options: BridgeCallOptions = {}): Promise<CallToolResult> {
    assertArgumentsDepth(name, args);
    const { catalog, guard, config } = this.parts;
    const mode = options.mode ?? config().mode;
    if (servesMetaTool(name, mode, { spills: () => guard.spills, listed: () => catalog.get(name) !== undefined })) {
      return callMetaTool(name, args ?? {}, this.metaToolHost({ ...options, mode }), options.signal, mode);
    }
    return this.callByName(name, args, { ...options, mode });
  }

  /**
   * Calls an upstream tool by its exposed name, never a meta-tool (a program's calls: a run cannot
   * start another run or page through spilled outputs), on the same way as {@link callTool}.
   */
  async callUpstream(name: string, args: JsonObject | undefined, options: BridgeCallOptions = {}): Promise<CallToolResult> {
    assertArgumentsDepth(name, args);
    return this.callByName(name, args, { ...options, mode: options.mode ?? this.parts.config().mode });
  }

  /** Calls `tool` of `server` (the daemon's and the CLI's form), validating like {@link callTool}. */
  async callServerTool(server: string, tool: string, args: JsonObject | undefined, options: BridgeCallOptions = {}): Promise<CallToolResult> {
    assertArgumentsDepth(`${server}/${tool}`, args);
    const found = await this.parts.resolver.findWhenStarted(server, tool, options.signal);
    // Not in the catalog: the pool gives the precise reason (filtered tool, server down).
    if (!found) return this.forward(server, tool, args, options);
    return this.callResolved(found, args, options);
  }

  /** `read_output {handle, offset}`: one page of a spilled output. */
  readOutput(args: JsonObject): Promise<CallToolResult> {
    return this.parts.guard.readOutput(args);
  }

  /** What the meta-tools of one call may do: each step goes through this pipeline again. */
  private metaToolHost(options: BridgeCallOptions): MetaToolHost {
    const { resolver, catalog, config, waitReady } = this.parts;
    return {
      schema: (tool, signal) => resolver.schemaWhenStarted(tool, signal),
      search: async (query, limit, signal): Promise<SearchResult[]> => {
        // Searching is listing: upstreams still starting get the same grace as a first tools/list.
        await waitReady(config().startup_grace_ms, signal);
        return catalog.search(query, limit);
      },
      call: (tool, args) => this.callByName(tool, args, options),
      readOutput: (args) => this.readOutput(args),
      declare: (request, signal) => this.parts.code().declare(request, signal),
      runCode: async (code, signal) => (await this.parts.code().run(code, { ...options, ...(signal ? { signal } : {}) })).answer,
    };
  }

  private async callByName(name: string, args: JsonObject | undefined, options: BridgeCallOptions): Promise<CallToolResult> {
    const resolved = await this.resolveOrRefuse(name, args, options);
    if ("refused" in resolved) return resolved.refused;
    return this.callResolved(resolved.tool, args, options);
  }

  /**
   * The tool a name means, except that a name the policy hides (the model guessed it, or kept it
   * from before a reload) gets the refusal naming the rule, audited, instead of "unknown tool".
   * Only tools the server really listed, or names a deny/allow glob covers, are refused; a typo
   * stays TOOL_NOT_FOUND with suggestions.
   */
  private async resolveOrRefuse(
    name: string,
    args: JsonObject | undefined,
    options: BridgeCallOptions,
  ): Promise<{ tool: CatalogTool } | { refused: CallToolResult }> {
    const { resolver, guard } = this.parts;
    try {
      return { tool: await resolver.resolveWhenStarted(name, options.signal) };
    } catch (err) {
      if (!(err instanceof AbridgeError) || err.code !== ErrorCode.TOOL_NOT_FOUND) throw err;
      for (const candidate of resolver.originsOf(name)) {
        const decision = guard.check(candidate.server, candidate.tool);
        if (decision.allowed) continue;
        const byGlob = decision.rule.startsWith(`servers.${candidate.server}.deny[`) || decision.rule === `servers.${candidate.server}.allow`;
        if (!byGlob && !guard.known(candidate.server, candidate.tool)) continue;
        const refused = await guard.refuse(decision, auditEvent(candidate.server, candidate.tool, args, options, Date.now()));
        return { refused };
      }
      throw resolver.unavailableServerError(name) ?? err;
    }
  }

  private async callResolved(tool: CatalogTool, args: JsonObject | undefined, options: BridgeCallOptions): Promise<CallToolResult> {
    const { catalog, guard, config } = this.parts;
    const mode = options.mode ?? config().mode;
    if (mode === "compact" || mode === "lazy" || mode === "auto" || mode === "code") {
      const result = catalog.validate(tool, args ?? {});
      if (!result.ok) {
        this.counters.invalidArguments += 1;
        await guard.audit({ ...auditEvent(tool.server, tool.tool.name, args, options, Date.now()), outcome: "invalid_arguments" });
        const schema = getSchemaResult(tool);
        return {
          isError: true,
          content: [
            {
              type: "text",
              text: `${result.text}\nThe call was not forwarded. Full schema of ${tool.name}:\n${JSON.stringify(schema.inputSchema)}`,
            },
          ],
        };
      }
    }
    return this.forward(tool.server, tool.tool.name, args, options);
  }

  /**
   * Every upstream call ends here: the permission gate first (a refusal is a tool error naming
   * the rule, never forwarded), then the call, then the trust marking and output limit; each
   * outcome is audited.
   */
  private async forward(server: string, tool: string, args: JsonObject | undefined, options: BridgeCallOptions): Promise<CallToolResult> {
    const { guard, pool, callCounts } = this.parts;
    const startedMs = Date.now();
    const decision = guard.check(server, tool);
    if (!decision.allowed) return guard.refuse(decision, auditEvent(server, tool, args, options, startedMs));
    this.counters.total += 1;
    callCounts.increment(server, tool);
    this.counters.inFlight += 1;
    try {
      // The options travel whole down to the connection that forwards the call (its signal,
      // timeout, progress and relay; the rest is not read there): one object less per call.
      const result = await pool.callTool(server, tool, args, options);
      // Shaped before the guard's output limit, so the limit counts (and a spill keeps) what is sent;
      // not for a program's call, which reads the result as a value, not as text for the model.
      const shaped = options.run === undefined ? shapeCallResult(this.parts.config(), server, tool, result) : programView(result);
      const finished = await guard.finish(server, shaped, options.signal);
      // Without an audit log there is nothing to record: the event is not even built.
      if (guard.auditing) await guard.audit({ ...auditEvent(server, tool, args, options, startedMs), outcome: result.isError === true ? "tool_error" : "ok" });
      return finished;
    } catch (err) {
      this.counters.failed += 1;
      const code = err instanceof AbridgeError ? err.code : ErrorCode.INTERNAL;
      await guard.audit({
        ...auditEvent(server, tool, args, options, startedMs),
        outcome: code === ErrorCode.CANCELLED ? "cancelled" : "error",
        errorCode: code,
      });
      throw err;
    } finally {
      this.counters.inFlight -= 1;
    }
  }
}

/** What the audit log records of a call, but its outcome. */
function auditEvent(server: string, tool: string, args: JsonObject | undefined, options: BridgeCallOptions, startedMs: number) {
  return {
    ...(options.client !== undefined ? { client: options.client } : {}),
    server,
    tool,
    args: args ?? {},
    startedMs,
    ...(options.run !== undefined ? { run: options.run } : {}),
  };
}
