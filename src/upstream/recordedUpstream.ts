import { readFile } from "node:fs/promises";
import type { ServerConfig } from "../config/schema.js";
import { AbridgeError, ErrorCode, isAbridgeError } from "../model/errors.js";
import { silentLogger } from "../log/logger.js";
import type { Logger } from "../log/logger.js";
import { parseRecordedList } from "./recordedList.js";
import { createToolFilter } from "./toolFilter.js";
import type { ToolFilter } from "./toolFilter.js";
import type { CallToolResult, JsonObject, RawTool, ServerState, ServerStatus } from "../model/types.js";

/** Options of a {@link RecordedUpstream}: the pool's callbacks, as an `UpstreamConnection` gets them. */
export interface RecordedUpstreamOptions {
  logger?: Logger;
  /** Called whenever {@link RecordedUpstream.status} changes. */
  onStatusChanged?: (status: ServerStatus) => void;
  /** Called when the (filtered) tool list changed after the first load ({@link RecordedUpstream.refresh}). */
  onToolsChanged?: () => void;
}

/**
 * A server whose tools come from a recorded `tools/list` answer (`recorded = "tools.json"`)
 * rather than from a process: listing, `get_schema` and search treat it like any server, while a
 * call, or any other request, is refused with `UPSTREAM_RECORDED`, since nothing runs behind it.
 * Lets people plan a token budget for servers they have not installed, and lets benchmarks and
 * tests serve real catalogs without their dependencies.
 *
 * A file that cannot be read or is not a tool list leaves the server `failed` with
 * `CONFIG_INVALID` naming the config field and the file's own problem; it is not retried, since
 * waiting does not mend a file (a later {@link refresh} reads it again).
 */
export class RecordedUpstream {
  private currentConfig: ServerConfig;
  private readonly logger: Logger;
  private readonly onStatusChanged: ((status: ServerStatus) => void) | undefined;
  private readonly onToolsChanged: (() => void) | undefined;
  private filter: ToolFilter;
  private state: ServerState;
  private error: { code: ErrorCode; message: string } | undefined;
  private startedAt: string | undefined;
  private serverInfo: { name: string; version: string } | undefined;
  /** Every tool of the file, normalized as a live server's list is (nulls dropped). */
  private listedTools: RawTool[] = [];
  /** {@link listedTools} after allow/deny: what the pool exposes. */
  private toolList: RawTool[] = [];
  private startPromise: Promise<void> | undefined;
  private closed = false;

  constructor(config: ServerConfig, options: RecordedUpstreamOptions = {}) {
    if (config.recorded === undefined) {
      throw new AbridgeError(ErrorCode.INTERNAL, `server "${config.name}" has no recorded file`);
    }
    this.currentConfig = config;
    this.logger = (options.logger ?? silentLogger).child({ server: config.name });
    this.onStatusChanged = options.onStatusChanged;
    this.onToolsChanged = options.onToolsChanged;
    this.filter = createToolFilter(config.allow, config.deny);
    this.state = config.enabled ? "connecting" : "disabled";
  }

  /** The server's config entry (replaced by {@link updateConfig}). */
  get config(): ServerConfig {
    return this.currentConfig;
  }

  /** Server name. */
  get name(): string {
    return this.config.name;
  }

  /** The file's absolute path (resolved against the config file's folder when loaded). */
  get file(): string {
    return this.config.recorded ?? "";
  }

  /** Takes new filters and settings in place; true when the exposed tool list changed. */
  updateConfig(config: ServerConfig): boolean {
    if (config.name !== this.currentConfig.name) {
      throw new AbridgeError(ErrorCode.INTERNAL, `config of "${config.name}" given to the recorded server "${this.currentConfig.name}"`);
    }
    this.currentConfig = config;
    this.filter = createToolFilter(config.allow, config.deny);
    const before = JSON.stringify(this.toolList);
    this.toolList = this.listedTools.filter((t) => this.filter(t.name));
    const changed = JSON.stringify(this.toolList) !== before;
    if (changed) this.onStatusChanged?.(this.status());
    return changed;
  }

  /** Current status (a fresh object). */
  status(): ServerStatus {
    const status: ServerStatus = {
      name: this.config.name,
      transport: "recorded",
      state: this.state,
      toolCount: this.toolList.length,
      restarts: 0,
    };
    if (this.startedAt !== undefined) status.startedAt = this.startedAt;
    if (this.error !== undefined) status.error = { ...this.error };
    if (this.serverInfo !== undefined) status.serverInfo = { ...this.serverInfo };
    if (this.state === "ready") status.capabilities = { tools: {} };
    return status;
  }

  /** Tools after allow/deny filtering, in the file's order. */
  tools(): RawTool[] {
    return [...this.toolList];
  }

  /** No process runs behind a recorded server. */
  pids(): number[] {
    return [];
  }

  /** Reads the file. Never rejects: a bad file leaves the server `failed` (see the class). Idempotent. */
  start(_signal?: AbortSignal): Promise<void> {
    this.startPromise ??= this.load();
    return this.startPromise;
  }

  /** Reads the file again; `onToolsChanged` fires when the exposed list differs. */
  async refresh(): Promise<void> {
    if (this.startPromise) await this.startPromise;
    if (this.state === "disabled" || this.closed) return;
    const before = JSON.stringify(this.toolList);
    await this.load();
    if (JSON.stringify(this.toolList) !== before) this.onToolsChanged?.();
  }

  private async load(): Promise<void> {
    if (!this.config.enabled || this.closed) return;
    try {
      const recorded = await readRecordedFile(this.config);
      if (this.closed) return;
      this.listedTools = recorded.tools;
      this.toolList = recorded.tools.filter((t) => this.filter(t.name));
      this.serverInfo = recorded.serverInfo;
      this.error = undefined;
      this.startedAt = new Date().toISOString();
      this.logger.info("recorded server loaded", { tools: this.toolList.length, file: this.file });
      this.setState("ready");
    } catch (err) {
      if (this.closed) return;
      const error = isAbridgeError(err) ? err : new AbridgeError(ErrorCode.CONFIG_INVALID, String(err), { cause: err });
      this.error = { code: error.code, message: error.message };
      this.listedTools = [];
      this.toolList = [];
      this.logger.warn("recorded server failed to load", { code: error.code, error: error.message });
      this.setState("failed");
    }
  }

  private setState(state: ServerState): void {
    this.state = state;
    this.onStatusChanged?.(this.status());
  }

  /** Refused: a recorded server lists tools but has nothing that could run them. */
  async callTool(tool: string, _args: JsonObject | undefined, _options: object = {}): Promise<CallToolResult> {
    throw this.refusal(`tools/call of "${tool}"`);
  }

  /**
   * `tools/list` answers with the recorded tools after allow/deny (one page); every other request
   * is refused with `UPSTREAM_RECORDED`.
   */
  async request(method: string, params: JsonObject | undefined, options: object = {}): Promise<JsonObject> {
    if (method === "tools/call") return this.callTool(typeof params?.name === "string" ? params.name : "?", undefined, options);
    if (method === "tools/list") return { tools: this.tools() };
    throw this.refusal(method);
  }

  /** `tools/list` gives the tools; the server has no resources or prompts (`[]`). */
  async listAll(method: string, _key: string, _options: object = {}): Promise<JsonObject[]> {
    return method === "tools/list" ? this.tools() : [];
  }

  /** The recorded tools as the file holds them (allow/deny not applied), as `abridge record` would write them. */
  async recordTools(_options: object = {}): Promise<JsonObject[]> {
    if (this.state !== "ready") throw new AbridgeError(ErrorCode.UPSTREAM_UNAVAILABLE, `${this.name} is ${this.state}${this.error ? `: ${this.error.message}` : ""}`);
    return [...this.listedTools];
  }

  private refusal(what: string): AbridgeError {
    return new AbridgeError(
      ErrorCode.UPSTREAM_RECORDED,
      `${this.name} is a recorded server (${this.file}): it lists tools but cannot run them; ${what} was not sent anywhere. Configure the live server (command or url) to call its tools.`,
      { details: { server: this.name, recorded: this.file } },
    );
  }

  /** Idempotent; nothing to end. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.state !== "disabled") this.setState("closed");
  }
}

/**
 * Reads and checks the recorded file of `config`. Errors are `CONFIG_INVALID` and name the config
 * field (`servers.<name>.recorded`), the file, and what in it is wrong (`tools[3].name: ...`).
 */
export async function readRecordedFile(config: ServerConfig): Promise<ReturnType<typeof parseRecordedList>> {
  const file = config.recorded ?? "";
  const field = `servers.${config.name}.recorded`;
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new AbridgeError(ErrorCode.CONFIG_INVALID, `${field}: cannot read ${file}${code ? ` (${code})` : ""}`, { cause: err, details: { file, field } });
  }
  try {
    return parseRecordedList(text, file);
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    throw new AbridgeError(ErrorCode.CONFIG_INVALID, message.split("\n").map((line) => `${field}: ${line}`).join("\n"), { cause: err, details: { file, field } });
  }
}
