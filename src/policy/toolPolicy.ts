import type { ServerConfig } from "../config/schema.js";
import { allowDenyOf } from "./allowDeny.js";
import type { AllowDeny } from "./allowDeny.js";
import type { RawTool } from "../model/types.js";

/** Whether a call may go through, and if not, which setting refused it. */
export type PolicyDecision = { allowed: true } | { allowed: false; rule: string; reason: string };

/** Options of {@link ToolPolicy}. */
export interface ToolPolicyOptions {
  /** Every configured server (resolved: inherited `read_only`/`destructive` already filled in). */
  servers: readonly ServerConfig[];
  /** `--read-only` on `serve`/`daemon`: read-only everywhere, and no `allow` glob lifts it. */
  forceReadOnly?: boolean;
}

/** Rule name of the forced read-only flag. */
export const FORCE_READ_ONLY_RULE = "--read-only";

interface CompiledServer {
  name: string;
  readOnly: boolean;
  destructive: "allow" | "deny";
  lists: AllowDeny;
}

/**
 * True when the MCP annotations mark a tool read-only. Only an explicit `readOnlyHint: true`
 * counts: the spec's default is false, and a gate must not guess in the permissive direction.
 */
export function isReadOnlyTool(tool: RawTool | undefined): boolean {
  return tool?.annotations?.readOnlyHint === true;
}

/**
 * True when a tool may be destructive. The MCP spec's defaults apply: `destructiveHint` defaults
 * to true for a tool that is not read-only, so an unannotated tool counts as destructive, and a
 * read-only tool never does (the hint is meaningful only when `readOnlyHint` is false).
 */
export function isDestructiveTool(tool: RawTool | undefined): boolean {
  if (isReadOnlyTool(tool)) return false;
  return tool?.annotations?.destructiveHint !== false;
}

/**
 * The permission gates of every server, pure and synchronous. Order of precedence:
 * 1. a `deny` glob refuses (`servers.x.deny["delete_*"]`);
 * 2. `--read-only` refuses anything not annotated read-only;
 * 3. with an `allow` list, a tool matching none is refused (`servers.x.allow`); a tool that
 *    matches one is allowed outright: the operator named it, which wins over the annotation gates;
 * 4. `read_only = true` refuses tools not annotated `readOnlyHint: true` (`servers.x.read_only`);
 * 5. `destructive = "deny"` refuses destructive tools (`servers.x.destructive = "deny"`).
 * A tool known only by name (a guessed name, no annotations) is judged with no annotations, so
 * the annotation gates refuse it.
 */
export class ToolPolicy {
  private readonly servers = new Map<string, CompiledServer>();
  private readonly forceReadOnly: boolean;

  constructor(options: ToolPolicyOptions) {
    this.forceReadOnly = options.forceReadOnly ?? false;
    for (const server of options.servers) {
      this.servers.set(server.name, {
        name: server.name,
        readOnly: server.read_only,
        destructive: server.destructive,
        lists: allowDenyOf(server),
      });
    }
  }

  /** True when `--read-only` is in force. */
  get readOnlyForced(): boolean {
    return this.forceReadOnly;
  }

  /** True when `tool` of `server` may be listed (the same answer as {@link check}). */
  visible(server: string, tool: RawTool): boolean {
    return this.check(server, tool).allowed;
  }

  /**
   * Decides a call to `tool` (the listed tool, or only its name when it is not listed) of
   * `server`. An unknown server is allowed here: the pool reports it as unknown.
   */
  check(server: string, tool: RawTool | string): PolicyDecision {
    const name = typeof tool === "string" ? tool : tool.name;
    const raw = typeof tool === "string" ? undefined : tool;
    const compiled = this.servers.get(server);
    if (!compiled && !this.forceReadOnly) return { allowed: true };
    const prefix = `servers.${server}`;
    const denied = compiled?.lists.denyingGlob(name);
    if (denied !== undefined) {
      return refuse(`${prefix}.deny[${JSON.stringify(denied)}]`, `tool "${name}" matches the deny glob ${JSON.stringify(denied)}`);
    }
    if (this.forceReadOnly && !isReadOnlyTool(raw)) {
      return refuse(FORCE_READ_ONLY_RULE, `abridge runs with --read-only and tool "${name}" is not annotated readOnlyHint: true`);
    }
    if (!compiled) return { allowed: true };
    if (compiled.lists.hasAllowList) {
      if (compiled.lists.allowed(name)) return { allowed: true };
      return refuse(`${prefix}.allow`, `tool "${name}" matches no allow glob`);
    }
    if (compiled.readOnly && !isReadOnlyTool(raw)) {
      return refuse(`${prefix}.read_only`, `server "${server}" is read-only and tool "${name}" is not annotated readOnlyHint: true`);
    }
    if (compiled.destructive === "deny" && isDestructiveTool(raw)) {
      return refuse(
        `${prefix}.destructive = "deny"`,
        `tool "${name}" is ${raw?.annotations?.destructiveHint === true ? "annotated destructiveHint: true" : "not annotated as non-destructive (MCP default: destructive)"}`,
      );
    }
    return { allowed: true };
  }
}

function refuse(rule: string, reason: string): PolicyDecision {
  return { allowed: false, rule, reason };
}
