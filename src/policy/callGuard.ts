import path from "node:path";
import { bridgeStateDir } from "../cache/cachePaths.js";
import { DEFAULT_MAX_OUTPUT_BYTES, type Config, type ServerConfig } from "../config/schema.js";
import { isAbridgeError, messageOf } from "../model/errors.js";
import { silentLogger } from "../log/logger.js";
import type { Logger } from "../log/logger.js";
import type { CallToolResult, ExposedTool, JsonObject, RawTool } from "../model/types.js";
import { AuditLog } from "./auditLog.js";
import type { AuditOutcome, AuditRun } from "./auditLog.js";
import { limitOutput, markUntrusted, resultBytes, TRUST_META_KEY, UNTRUSTED_TOOL_OUTPUT, utf8Bytes, utf8Head } from "./outputLimit.js";
import { limitPromptResult, limitResourceResult } from "./readResultLimit.js";
import { SpillStore, spillOffsetOf } from "./spillStore.js";
import { exposesTool } from "./allowDeny.js";
import { ToolPolicy } from "./toolPolicy.js";
import type { PolicyDecision } from "./toolPolicy.js";

/** `_meta` key of a refused call's result: the rule that refused it. */
export const REFUSED_META_KEY = "abridge/refused-by";

/** Options of {@link CallGuard.open}. */
export interface CallGuardOptions {
  /**
   * The config, or a function returning the one in force: a reloaded config takes effect on the
   * next call (the policy is rebuilt when the object changes). The audit log stays the one opened.
   */
  config: Config | (() => Config);
  /** Environment for the state dir lookup (`ABRIDGE_STATE_DIR`, `XDG_STATE_HOME`, `HOME`). */
  env: Record<string, string | undefined>;
  /** Where spilled outputs go (`<stateDir>/outputs`); default from config and environment. */
  stateDir?: string;
  /** `--read-only`. */
  forceReadOnly?: boolean;
  logger?: Logger;
}

/** One finished call, for {@link CallGuard.audit}. */
export interface GuardAuditEvent {
  client?: string;
  server: string;
  tool: string;
  args: unknown;
  outcome: AuditOutcome;
  startedMs: number;
  rule?: string;
  errorCode?: string;
  run?: AuditRun;
}

/**
 * Everything that stands between a model's call and an upstream: the permission policy, the
 * output limit with its trust marking and spill store, and the audit log. The Bridge asks it
 * before forwarding and hands it every result; it never talks to an upstream itself.
 */
export class CallGuard {
  private readonly configOf: () => Config;
  private readonly forceReadOnly: boolean;
  private seenConfig: Config | undefined;
  private currentPolicy: ToolPolicy | undefined;
  private readonly auditLog: AuditLog | undefined;
  private readonly spill: SpillStore;
  private readonly logger: Logger;
  /** Annotations of every tool the pool knows (listed or hidden), by `server\0tool`. */
  private rawTools = new Map<string, RawTool>();

  private constructor(configOf: () => Config, auditLog: AuditLog | undefined, spill: SpillStore, options: CallGuardOptions) {
    this.configOf = configOf;
    this.forceReadOnly = options.forceReadOnly ?? false;
    this.auditLog = auditLog;
    this.spill = spill;
    this.logger = options.logger ?? silentLogger;
  }

  /**
   * Builds the guard and opens the audit log when `audit_log` is set.
   *
   * @throws AbridgeError CACHE_IO when the audit log cannot be opened: an operator who asked
   *   for an audit trail must not get a bridge that silently keeps none.
   */
  static async open(options: CallGuardOptions): Promise<CallGuard> {
    const configOf =
      typeof options.config === "function"
        ? options.config
        : (
            (c: Config) => () =>
              c
          )(options.config);
    const config = configOf();
    const auditLog =
      config.audit_log === undefined
        ? undefined
        : await AuditLog.open({
            file: config.audit_log,
            includeArguments: config.audit_arguments,
            ...(options.logger ? { logger: options.logger } : {}),
          });
    // Nothing is created on disk until a result is actually spilled.
    const stateDir = options.stateDir ?? bridgeStateDir(config, options.env);
    const spill = new SpillStore({ dir: path.join(stateDir, "outputs"), ...(options.logger ? { logger: options.logger } : {}) });
    return new CallGuard(configOf, auditLog, spill, options);
  }

  /** True when calls are recorded (`audit_log` is set): without it {@link audit} does nothing. */
  get auditing(): boolean {
    return this.auditLog !== undefined;
  }

  /** Where spilled outputs are kept (a sandboxed server must not read them). */
  get spillDir(): string {
    return this.spill.dir;
  }

  /** The permission policy of the config in force. */
  get policy(): ToolPolicy {
    const config = this.configOf();
    if (this.currentPolicy === undefined || this.seenConfig !== config) {
      this.seenConfig = config;
      this.currentPolicy = new ToolPolicy({ servers: config.servers, forceReadOnly: this.forceReadOnly });
    }
    return this.currentPolicy;
  }

  /** True when `read_output` is served (some enabled server spills). */
  get spills(): boolean {
    return this.configOf().servers.some((s) => s.enabled && s.spill);
  }

  /**
   * The `allow`/`deny` decision the upstream pool applies as it lists a server's tools (given to
   * it as its `exposes` option): a tool that fails it is neither exposed, counted nor forwarded.
   */
  exposes(server: ServerConfig, tool: string): boolean {
    return exposesTool(server, tool);
  }

  /** Remembers every tool's annotations and returns the ones the policy lets the model see. */
  visibleTools(tools: readonly ExposedTool[]): ExposedTool[] {
    this.rawTools = new Map(tools.map((t) => [`${t.server}\0${t.tool.name}`, t.tool]));
    return tools.filter((t) => this.policy.visible(t.server, t.tool));
  }

  /** True when the pool listed `tool` of `server` (visible or hidden by the policy). */
  known(server: string, tool: string): boolean {
    return this.rawTools.has(`${server}\0${tool}`);
  }

  /** The policy's decision on a call, with the tool's annotations when the pool listed it. */
  check(server: string, tool: string): PolicyDecision {
    return this.policy.check(server, this.rawTools.get(`${server}\0${tool}`) ?? tool);
  }

  /** The tool error a refused call gets (never forwarded); audits it. */
  async refuse(decision: PolicyDecision & { allowed: false }, event: Omit<GuardAuditEvent, "outcome" | "rule">): Promise<CallToolResult> {
    await this.audit({ ...event, outcome: "refused", rule: decision.rule });
    return {
      isError: true,
      content: [{ type: "text", text: `Refused by ${decision.rule}: ${decision.reason}. The call was not forwarded.` }],
      _meta: { [REFUSED_META_KEY]: decision.rule },
    };
  }

  /**
   * Marks an upstream result as untrusted output of `server` and enforces `max_output_bytes`,
   * spilling the whole result when the server has `spill = true`.
   */
  async finish(server: string, result: CallToolResult, signal?: AbortSignal): Promise<CallToolResult> {
    const marked = markUntrusted(result, server);
    const config = this.configOf().servers.find((s) => s.name === server);
    if (!config) return marked;
    const maxBytes = config.max_output_bytes;
    if (resultBytes(marked) <= maxBytes) return marked;
    if (config.spill) {
      try {
        const handle = await this.spill.save(marked, signal);
        return limitOutput(marked, { maxBytes, spill: { handle, offsetOf: (i) => spillOffsetOf(marked, i) } }).result;
      } catch (err) {
        this.logger.warn("could not keep a large output; cutting it without a handle", { server, error: messageOf(err) });
      }
    }
    return limitOutput(marked, { maxBytes }).result;
  }

  /**
   * abridge's own answer text (a program's output) within the top-level `max_output_bytes`: past
   * it, the head that fits and a marker saying how much was left out; with the top-level
   * `spill = true` the whole text is kept first and the marker gives the `read_output` handle and
   * offset to read on from. A `footer` is kept whole after the cut (a run's calls and time), and
   * is not part of what is spilled.
   */
  async limitText(text: string, signal?: AbortSignal, footer = ""): Promise<string> {
    const config = this.configOf();
    const maxBytes = config.max_output_bytes ?? DEFAULT_MAX_OUTPUT_BYTES;
    const tail = footer === "" ? "" : `\n${footer}`;
    const total = utf8Bytes(text);
    if (total + utf8Bytes(tail) <= maxBytes) return `${text}${tail}`;
    let handle: string | undefined;
    if (config.spill === true) {
      try {
        handle = await this.spill.save({ content: [{ type: "text", text }] }, signal);
      } catch (err) {
        this.logger.warn("could not keep a large answer; cutting it without a handle", { error: messageOf(err) });
      }
    }
    // The marker's own bytes come off the room first; 200 bytes hold it with any handle and figures.
    const head = utf8Head(text, Math.max(0, maxBytes - 200 - utf8Bytes(tail)));
    const kept = utf8Bytes(head);
    const rest = handle === undefined ? "" : ` The whole output is kept: call read_output with {"handle":"${handle}","offset":${kept}} to read on.`;
    return `${head}\n[abridge: output cut: ${total - kept} of ${total} bytes left out (limit ${maxBytes}).${rest}]${tail}`;
  }

  /**
   * {@link finish} for a `resources/read` (`uri` given) or `prompts/get` result of `server`: the
   * same trust marking and `max_output_bytes`, cut without a spill (see readResultLimit.ts).
   */
  finishRead(server: string, result: JsonObject, uri?: string): JsonObject {
    const marked = markUntrusted(result, server);
    const config = this.configOf().servers.find((s) => s.name === server);
    if (!config) return marked;
    return uri !== undefined ? limitResourceResult(marked, uri, config.max_output_bytes) : limitPromptResult(marked, config.max_output_bytes);
  }

  /** `read_output {handle, offset}`: one page of a spilled output, with where to go on. */
  async readOutput(args: JsonObject): Promise<CallToolResult> {
    const error = (text: string): CallToolResult => ({ isError: true, content: [{ type: "text", text }] });
    if (!this.spills) return error("read_output: no server keeps outputs (spill is off)");
    const handle = args.handle;
    const offset = args.offset ?? 0;
    if (typeof handle !== "string") return error('read_output needs {"handle": "<handle>", "offset": <number>}');
    if (typeof offset !== "number") return error("read_output: offset must be a number");
    // Pages are as large as the strictest spilling server allows a result to be.
    const pageBytes = Math.min(
      ...this.configOf()
        .servers.filter((s) => s.spill)
        .map((s) => s.max_output_bytes),
    );
    try {
      const page = await this.spill.read(handle, offset, pageBytes);
      const end = page.nextOffset ?? page.totalBytes;
      const trailer =
        page.nextOffset === undefined
          ? `[abridge: bytes ${page.offset}-${end} of ${page.totalBytes}; end of output]`
          : `[abridge: bytes ${page.offset}-${end} of ${page.totalBytes}; call read_output with {"handle":"${handle}","offset":${page.nextOffset}} to read on]`;
      return {
        content: [
          { type: "text", text: page.text },
          { type: "text", text: trailer },
        ],
        _meta: { [TRUST_META_KEY]: UNTRUSTED_TOOL_OUTPUT },
      };
    } catch (err) {
      if (isAbridgeError(err)) return error(err.message);
      throw err;
    }
  }

  /** Writes an audit line when an audit log is configured. Never rejects. */
  async audit(event: GuardAuditEvent): Promise<void> {
    if (!this.auditLog) return;
    await this.auditLog.record({
      ...(event.client !== undefined ? { client: event.client } : {}),
      server: event.server,
      tool: event.tool,
      args: event.args,
      outcome: event.outcome,
      durationMs: Date.now() - event.startedMs,
      ...(event.rule !== undefined ? { rule: event.rule } : {}),
      ...(event.errorCode !== undefined ? { errorCode: event.errorCode } : {}),
      ...(event.run !== undefined ? { run: event.run } : {}),
    });
  }

  /** Flushes and closes the audit log. Idempotent. */
  async close(): Promise<void> {
    await this.auditLog?.close();
  }
}
