/**
 * The code view: code mode's `search_tools` (TypeScript declarations of the tools found) and
 * `run_code` (a program run against the tools), for every front end alike.
 *
 * A program's tool call takes the way of any other call ({@link CallPipeline.callUpstream}):
 * allow/deny, the read-only and destructive gates, validation against the full schema, the
 * server's timeout and output limit, and the audit log, which records the run's id and the
 * program's hash beside it. What a call gives back is shaped into a value for the program
 * (`toolResultValue`); the shape of a value of a tool without an `outputSchema` is kept, so the
 * next declarations of that tool say what it returns.
 */
import { createHash, randomUUID } from "node:crypto";
import { declarations } from "../declarations/declarations.js";
import { CodeNames } from "../declarations/codeNames.js";
import type { DeclarationRequest } from "../../catalog/metaTools.js";
import { isMetaTool } from "../../catalog/metaTools.js";
import type { ToolCatalog } from "../../catalog/toolCatalog.js";
import type { CatalogTool } from "../../catalog/types.js";
import { codeAnswerBody, codeAnswerFooter } from "../runtime/answerText.js";
import type { CodeLimits } from "../runtime/codeLimits.js";
import { runProgram, type CodeHost, type CodeRunResult } from "../runtime/codeRuntime.js";
import type { CodeServerName } from "../runtime/globalNames.js";
import { toolResultValue } from "../runtime/toolResultValue.js";
import type { Config } from "../../config/schema.js";
import type { Logger } from "../../log/logger.js";
import { AbridgeError, ErrorCode } from "../../model/errors.js";
import { isObject } from "../../model/json.js";
import type { CallToolResult, JsonObject } from "../../model/types.js";
import type { CallGuard } from "../../policy/callGuard.js";
import { REFUSED_META_KEY } from "../../policy/callGuard.js";
import type { BridgeCallOptions } from "../../policy/callOptions.js";
import type { ObservedFile } from "./observedFile.js";

/** Options of a run ({@link CodeView.run}, `Bridge.runCode`). */
export interface RunCodeOptions extends Pick<BridgeCallOptions, "signal" | "client" | "relay"> {
  /** Limits of this run, each over the config's `[code]` value (default: the config's). */
  limits?: CodeLimits;
  /** The run's id in the audit log and the result (default: a random UUID). */
  runId?: string;
}

/** What a run produced: the runtime's result, and the answer a model reads (`run_code`'s result). */
export interface RunCodeAnswer {
  result: CodeRunResult;
  answer: CallToolResult;
}

/** Most tools a query's declarations hold when the model does not say (`limit`). */
const DEFAULT_DECLARED = 8;
/** Most tools one `search_tools` may declare. */
const MAX_DECLARED = 50;

/** What the code view works with. */
export interface CodeViewParts {
  catalog: ToolCatalog;
  guard: CallGuard;
  config: () => Config;
  /** An upstream call on the pipeline's way (never a meta-tool). */
  call: (name: string, args: JsonObject, options: BridgeCallOptions) => Promise<CallToolResult>;
  /** Waits for upstreams still starting, like a first list. */
  waitReady: (graceMs: number, signal?: AbortSignal) => Promise<boolean>;
  observed: ObservedFile;
  logger: Logger;
}

/** The text of a result's first text block (what a tool error says). */
function resultText(result: CallToolResult): string {
  const blocks = Array.isArray(result.content) ? result.content : [];
  const texts = blocks.filter((b): b is { type: "text"; text: string } => isObject(b) && b.type === "text" && typeof b.text === "string");
  return texts.map((b) => b.text).join("\n");
}

/** True when the guard cut the result at its server's `max_output_bytes`. */
function wasCut(result: CallToolResult): boolean {
  const blocks = Array.isArray(result.content) ? result.content : [];
  const last = blocks[blocks.length - 1];
  return isObject(last) && last.type === "text" && typeof last.text === "string" && last.text.startsWith("[abridge: output cut:");
}

export class CodeView {
  private namesMemo: { tools: readonly CatalogTool[]; names: CodeNames } | undefined;

  constructor(private readonly parts: CodeViewParts) {}

  /** The identifiers of every tool a program can call now (settled over the whole catalog). */
  private names(tools: readonly CatalogTool[]): CodeNames {
    if (this.namesMemo?.tools !== tools) {
      this.namesMemo = { tools, names: CodeNames.of(tools.map((t) => ({ server: t.server, tool: t.tool.name }))) };
    }
    return this.namesMemo.names;
  }

  /**
   * Code mode's `search_tools`: the declarations of the best tools for a query, or of the tools
   * named (exposed names, or `namespace.function` as a program writes them). Unknown names are
   * listed after the declarations, so the model sees what it got wrong.
   */
  async declare(request: DeclarationRequest, signal?: AbortSignal): Promise<string> {
    const { catalog, config, waitReady } = this.parts;
    await waitReady(config().startup_grace_ms, signal);
    const tools = catalog.tools();
    const names = this.names(tools);
    const chosen: CatalogTool[] = [];
    const unknown: string[] = [];
    if ("names" in request) {
      for (const name of request.names) {
        const tool = catalog.get(name) ?? this.byCodeName(name, names);
        if (tool === undefined) unknown.push(name);
        else chosen.push(tool);
      }
    } else {
      const limit = Math.min(MAX_DECLARED, Math.max(1, Math.floor(request.limit ?? DEFAULT_DECLARED)));
      for (const hit of catalog.search(request.query, limit)) {
        const tool = catalog.get(hit.name);
        if (tool !== undefined) chosen.push(tool);
      }
    }
    const text = chosen.length === 0 ? "" : declarations(chosen, { names, observed: this.parts.observed.shapes });
    const missing = unknown.length === 0 ? "" : `// no tool is named ${unknown.map((n) => JSON.stringify(n)).join(", ")}\n`;
    if (text === "" && missing === "") return "query" in request ? `// no tool matches ${JSON.stringify(request.query)}` : "";
    return `${text}${missing}`.trimEnd();
  }

  /** The tool a program's `namespace.function` names. */
  private byCodeName(name: string, names: CodeNames): CatalogTool | undefined {
    const dot = name.indexOf(".");
    if (dot <= 0) return undefined;
    const found = names.resolve(name.slice(0, dot), name.slice(dot + 1));
    return found === undefined ? undefined : this.parts.catalog.find(found.server, found.tool);
  }

  /** Runs `code` against the tools and answers with its output (see {@link RunCodeAnswer}). */
  async run(code: string, options: RunCodeOptions = {}): Promise<RunCodeAnswer> {
    const { catalog, config, waitReady, guard } = this.parts;
    await waitReady(config().startup_grace_ms, options.signal);
    const tools = catalog.tools();
    const names = this.names(tools);
    const runId = options.runId ?? randomUUID();
    const program = `sha256:${createHash("sha256").update(code).digest("hex")}`;
    const host: CodeHost = {
      servers: this.servers(tools, names),
      callTool: (exposed, args, context) => this.callFromProgram(exposed, args, { ...options, signal: context.signal, run: { id: runId, program } }),
    };
    const limits = { ...config().code, ...options.limits };
    const result = await runProgram(code, host, limits, {
      runId,
      logger: this.parts.logger,
      ...(options.signal !== undefined ? { signal: options.signal } : {}),
    });
    // The footer (calls made, time taken) stays whole however long the output: the model always
    // learns what the run did, even when the rest was cut.
    const text = await guard.limitText(codeAnswerBody(result), options.signal, codeAnswerFooter(result));
    const answer: CallToolResult = { content: [{ type: "text", text }], ...(result.ok ? {} : { isError: true }) };
    return { result, answer };
  }

  /** The program's globals: one per server, one method per tool, named as the declarations name them. */
  private servers(tools: readonly CatalogTool[], names: CodeNames): CodeServerName[] {
    const byServer = new Map<string, CatalogTool[]>();
    for (const tool of tools) {
      const list = byServer.get(tool.server);
      if (list === undefined) byServer.set(tool.server, [tool]);
      else list.push(tool);
    }
    return [...byServer].map(([server, list]) => ({
      name: server,
      identifier: names.namespaceOf(server) as string,
      tools: list.map((t) => ({ name: t.tool.name, exposed: t.name, method: names.functionOf(server, t.tool.name) as string })),
    }));
  }

  /**
   * One call a program made. A tool error, a refusal or a result past the output limit is thrown
   * with a code the program can read; a success is the result's value, whose shape is kept for a
   * tool that declares none.
   */
  private async callFromProgram(exposed: string, args: Record<string, unknown>, options: BridgeCallOptions): Promise<unknown> {
    const { catalog } = this.parts;
    if (isMetaTool(exposed) && catalog.get(exposed) === undefined) {
      throw new AbridgeError(ErrorCode.TOOL_NOT_FOUND, `"${exposed}" is one of abridge's own tools; a program calls the servers' tools`);
    }
    const result = await this.parts.call(exposed, args as JsonObject, { ...options, mode: "code", client: options.client ?? "code" });
    if (result.isError === true) {
      const refused = isObject(result._meta) && typeof result._meta[REFUSED_META_KEY] === "string";
      throw new AbridgeError(refused ? ErrorCode.TOOL_REFUSED : ErrorCode.TOOL_ERROR, resultText(result) || `${exposed} failed`);
    }
    const tool = catalog.get(exposed);
    if (wasCut(result)) {
      throw new AbridgeError(
        ErrorCode.OUTPUT_LIMIT,
        `the result of ${exposed} is larger than max_output_bytes of server "${tool?.server ?? "?"}": ${resultText(result).split("\n").pop() ?? ""}`,
      );
    }
    const value = toolResultValue(result);
    if (tool !== undefined && tool.tool.outputSchema === undefined) this.parts.observed.observe(tool.key, value);
    return value;
  }
}
