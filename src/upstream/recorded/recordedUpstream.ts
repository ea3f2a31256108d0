import type { ServerConfig } from "../../config/schema.js";
import { AbridgeError, ErrorCode, isAbridgeError, messageOf } from "../../model/errors.js";
import { readRegularFile } from "../../util/readRegularFile.js";
import { parseRecordedList } from "./recordedList.js";
import { UpstreamBase } from "../upstreamBase.js";
import type { StatusExtras, UpstreamBaseOptions } from "../upstreamBase.js";
import type { Upstream } from "../upstream.js";
import type { CallToolResult, JsonObject, ServerStatus } from "../../model/types.js";

/**
 * A recorded file larger than this is refused unread: the largest real server's list in the
 * corpus (bench/corpus) is 1.8 MB.
 */
export const MAX_RECORDED_BYTES = 64 * 1024 * 1024;

/**
 * Options of a {@link RecordedUpstream}: the pool's callbacks and exposure decision, as an
 * `UpstreamConnection` gets them (`onToolsChanged` fires for the first list read, then from
 * {@link RecordedUpstream.refresh} when the list changed).
 */
export type RecordedUpstreamOptions = UpstreamBaseOptions;

/**
 * A server whose tools come from a recorded `tools/list` answer (`recorded = "tools.json"`)
 * rather than from a process: listing, `get_schema` and search treat it like any server, while a
 * call, or any other request, is refused with `UPSTREAM_RECORDED`, since nothing runs behind it.
 * Lets people plan a token budget for servers they have not installed, and lets benchmarks and
 * tests serve real catalogs without their dependencies.
 *
 * A file that cannot be read, is not a regular file (a FIFO, a device), is over
 * {@link MAX_RECORDED_BYTES} or is not a tool list leaves the server `failed` with `CONFIG_INVALID`
 * naming the config field, the file and its problem; it is not retried, since waiting does not
 * mend a file (a later {@link refresh} reads it again).
 *
 * A recorded server is ready as soon as its file is read: its first list is announced to the pool
 * before its state leaves `connecting`, so a front end waiting for servers to settle finds its
 * tools in the very first `tools/list`.
 */
export class RecordedUpstream extends UpstreamBase implements Upstream {
  /** A recorded server has no resources to subscribe to. */
  readonly resubscribeOnReady = false;
  private startPromise: Promise<void> | undefined;
  private closed = false;

  constructor(config: ServerConfig, options: RecordedUpstreamOptions) {
    if (config.recorded === undefined) {
      throw new AbridgeError(ErrorCode.INTERNAL, `server "${config.name}" has no recorded file`);
    }
    super(config, options);
  }

  protected override get transportName(): ServerStatus["transport"] {
    return "recorded";
  }

  protected override get restartCount(): number {
    return 0;
  }

  protected override statusExtras(): StatusExtras {
    return this.state === "ready" ? { capabilities: { tools: {} } } : {};
  }

  /** The file's absolute path (resolved against the config file's folder when loaded). */
  get file(): string {
    return this.config.recorded ?? "";
  }

  /** A file that could not be read or is not a tool list (`CONFIG_INVALID`): a mistake in the config. */
  override startError(): { code: ErrorCode; message: string } | undefined {
    return this.error;
  }

  /** No process runs behind a recorded server. */
  pids(): number[] {
    return [];
  }

  /** Reads the file. Never rejects: a bad file leaves the server `failed` (see the class). Idempotent. */
  start(_signal?: AbortSignal): Promise<void> {
    this.startPromise ??= this.load(true);
    return this.startPromise;
  }

  /** Reads the file again; `onToolsChanged` fires when the exposed list differs. */
  async refresh(): Promise<void> {
    if (this.startPromise) await this.startPromise;
    if (this.state === "disabled" || this.closed) return;
    const before = JSON.stringify(this.toolList);
    await this.load(false);
    if (JSON.stringify(this.toolList) !== before) this.onToolsChanged?.();
  }

  /** `first`: the load of {@link start}, whose list is news to the pool (see the class). */
  private async load(first: boolean): Promise<void> {
    if (!this.config.enabled || this.closed) return;
    try {
      const recorded = await readRecordedFile(this.config);
      if (this.closed) return;
      this.listedTools = recorded.tools;
      this.toolList = this.exposed(recorded.tools);
      this.serverInfo = recorded.serverInfo;
      this.error = undefined;
      this.startedAt = new Date().toISOString();
      this.logger.info("recorded server loaded", { tools: this.toolList.length, file: this.file });
      // Told before the state changes: whoever waits for this server to settle reads the tools
      // next, and the pool must have them named by then (as a live server's first list is).
      if (first && this.toolList.length > 0) this.onToolsChanged?.();
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
    if (this.state !== "ready")
      throw new AbridgeError(ErrorCode.UPSTREAM_UNAVAILABLE, `${this.name} is ${this.state}${this.error ? `: ${this.error.message}` : ""}`);
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
 * field (`servers.<name>.recorded`), the file, and what is wrong with it (`cannot read it (ENOENT)`,
 * `it is a FIFO, not a regular file`, `tools[3].name: ...`).
 */
export async function readRecordedFile(config: ServerConfig): Promise<ReturnType<typeof parseRecordedList>> {
  const file = config.recorded ?? "";
  const field = `servers.${config.name}.recorded`;
  let text: string;
  try {
    text = await readRegularFile(file, MAX_RECORDED_BYTES);
  } catch (err) {
    throw new AbridgeError(ErrorCode.CONFIG_INVALID, `${field}: ${file}: ${messageOf(err)}`, { cause: err, details: { file, field } });
  }
  try {
    return parseRecordedList(text, file);
  } catch (err) {
    const message = messageOf(err);
    throw new AbridgeError(
      ErrorCode.CONFIG_INVALID,
      message
        .split("\n")
        .map((line) => `${field}: ${line}`)
        .join("\n"),
      { cause: err, details: { file, field } },
    );
  }
}
