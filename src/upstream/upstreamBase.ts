import type { ServerConfig } from "../config/schema.js";
import { AbridgeError, ErrorCode } from "../model/errors.js";
import { silentLogger } from "../log/logger.js";
import type { Logger } from "../log/logger.js";
import type { AdmittedTool, ServerState, ServerStatus } from "../model/types.js";

/**
 * Decides whether the pool exposes `tool` of `server` (the server's config entry as the
 * connection holds it now). The pool knows no rule of its own: whoever builds it gives it the
 * decision (the bridge gives the policy's `allow`/`deny`). A tool that fails it is not listed,
 * not counted in `toolCount`, and a call to it is refused before anything is sent.
 */
export type ToolExposure = (server: ServerConfig, tool: string) => boolean;

/** What every kind of upstream is given by the pool. */
export interface UpstreamBaseOptions {
  logger?: Logger;
  /** Which listed tools are exposed (see {@link ToolExposure}). */
  exposes: ToolExposure;
  /** Called whenever the status changes. */
  onStatusChanged?: (status: ServerStatus) => void;
  /** Called when the exposed tool list changed after the first discovery. */
  onToolsChanged?: () => void;
}

/** Status fields only some kinds of upstream have; absent ones are left out of the status. */
export interface StatusExtras {
  capabilities?: ServerStatus["capabilities"];
  instructions?: string;
  stderrLinesCut?: number;
}

/**
 * What a live connection and a recorded tool list share: the config entry, the state and its
 * error, the listed tools and the exposed ones, the status, and the in-place update of settings
 * that need no reconnect. One home for the status shape and for applying the exposure decision.
 */
export abstract class UpstreamBase {
  private currentConfig: ServerConfig;
  protected readonly logger: Logger;
  private readonly exposes: ToolExposure;
  protected readonly onStatusChanged: ((status: ServerStatus) => void) | undefined;
  protected readonly onToolsChanged: (() => void) | undefined;

  protected state: ServerState;
  protected error: { code: ErrorCode; message: string } | undefined;
  protected startedAt: string | undefined;
  protected serverInfo: { name: string; version: string } | undefined;
  /** What the server listed (malformed and duplicate tools dropped), before the exposure decision. */
  protected listedTools: AdmittedTool[] = [];
  /** {@link listedTools} that are exposed: what the pool serves. */
  protected toolList: AdmittedTool[] = [];
  /** The names of the tools in `toolList`, kept for that list (see {@link isListedTool}). */
  private listedNames: { list: readonly AdmittedTool[]; names: ReadonlySet<string> } | undefined;

  constructor(config: ServerConfig, options: UpstreamBaseOptions) {
    this.currentConfig = config;
    this.logger = (options.logger ?? silentLogger).child({ server: config.name });
    this.exposes = options.exposes;
    this.onStatusChanged = options.onStatusChanged;
    this.onToolsChanged = options.onToolsChanged;
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

  /** The `transport` shown in the status. */
  protected abstract get transportName(): ServerStatus["transport"];

  /** Restarts shown in the status. */
  protected abstract get restartCount(): number;

  /** Fields of the status this kind of upstream adds. */
  protected abstract statusExtras(): StatusExtras;

  /**
   * Takes a config entry that differs from the current one only in fields a running process does
   * not depend on (allow/deny, prefix, timeouts, policy and output settings): the exposure is
   * decided again for the last listed tools at once, with no reconnect, so calls in flight go on.
   * Returns true when the exposed tool list changed; the caller re-assigns names and tells its
   * listeners (one event for a whole reload rather than one per server).
   */
  updateConfig(config: ServerConfig): boolean {
    if (config.name !== this.currentConfig.name) {
      throw new AbridgeError(ErrorCode.INTERNAL, `config of "${config.name}" given to the upstream "${this.currentConfig.name}"`);
    }
    this.currentConfig = config;
    const before = JSON.stringify(this.toolList);
    this.toolList = this.exposed(this.listedTools);
    const changed = JSON.stringify(this.toolList) !== before;
    if (changed) this.onStatusChanged?.(this.status());
    return changed;
  }

  /**
   * The config mistake that fails the pool's start (see `Upstream.startError`). None by default:
   * a live server's failed start only marks it failed, and is retried; the kinds that read a file
   * or folder of the config at start override it.
   */
  startError(): { code: ErrorCode; message: string } | undefined {
    return undefined;
  }

  /** Current status (a fresh object). */
  status(): ServerStatus {
    const status: ServerStatus = {
      name: this.config.name,
      transport: this.transportName,
      state: this.state,
      toolCount: this.toolList.length,
      restarts: this.restartCount,
    };
    if (this.startedAt !== undefined) status.startedAt = this.startedAt;
    if (this.error !== undefined) status.error = { ...this.error };
    if (this.serverInfo !== undefined) status.serverInfo = { ...this.serverInfo };
    const extras = this.statusExtras();
    if (extras.capabilities !== undefined) status.capabilities = extras.capabilities;
    if (extras.instructions !== undefined) status.instructions = extras.instructions;
    if (extras.stderrLinesCut !== undefined && extras.stderrLinesCut > 0) status.stderrLinesCut = extras.stderrLinesCut;
    return status;
  }

  /**
   * The exposed tools. While a live server restarts, the last known list stays, so a model's
   * tool list does not flap; calls fail fast meanwhile.
   */
  tools(): AdmittedTool[] {
    return [...this.toolList];
  }

  /** True when `tool` is among the exposed tools listed: a set of their names, made once per list, since every call asks. */
  protected isListedTool(tool: string): boolean {
    if (this.listedNames?.list !== this.toolList) this.listedNames = { list: this.toolList, names: new Set(this.toolList.map((t) => t.name)) };
    return this.listedNames.names.has(tool);
  }

  /** True when `tool` is exposed by the current config (whether or not the server lists it). */
  protected isExposed(tool: string): boolean {
    return this.exposes(this.config, tool);
  }

  /** The tools of `listed` that are exposed, in their order. */
  protected exposed(listed: readonly AdmittedTool[]): AdmittedTool[] {
    return listed.filter((tool) => {
      if (this.isExposed(tool.name)) return true;
      this.logger.debug("tool filtered out by allow/deny", { tool: tool.name });
      return false;
    });
  }

  protected setState(state: ServerState): void {
    this.state = state;
    this.onStatusChanged?.(this.status());
  }
}
