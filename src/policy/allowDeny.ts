import type { ServerConfig } from "../config/schema.js";
import { globToRegExp } from "../model/glob.js";

/** One glob of an `allow` or `deny` list with its compiled form. */
interface CompiledGlob {
  glob: string;
  re: RegExp;
}

/**
 * A server's `allow` and `deny` globs, compiled once. The one reading of those two settings:
 * the pool's listing (through {@link exposesTool}) and `ToolPolicy`'s verdicts both ask it.
 */
export class AllowDeny {
  private readonly allow: CompiledGlob[] | undefined;
  private readonly deny: CompiledGlob[];

  constructor(allow: readonly string[] | undefined, deny: readonly string[]) {
    this.allow = allow?.map((glob) => ({ glob, re: globToRegExp(glob) }));
    this.deny = deny.map((glob) => ({ glob, re: globToRegExp(glob) }));
  }

  /** True when the server has an `allow` list (a tool must then match one of its globs). */
  get hasAllowList(): boolean {
    return this.allow !== undefined;
  }

  /** The first `deny` glob `tool` matches, or `undefined`. */
  denyingGlob(tool: string): string | undefined {
    return this.deny.find((d) => d.re.test(tool))?.glob;
  }

  /** True when `tool` matches an `allow` glob, or there is no `allow` list. */
  allowed(tool: string): boolean {
    return this.allow === undefined || this.allow.some((a) => a.re.test(tool));
  }

  /**
   * True when `tool` passes both lists: it matches some `allow` glob (or there is no `allow`
   * list) and no `deny` glob. Deny wins over allow.
   */
  passes(tool: string): boolean {
    return this.denyingGlob(tool) === undefined && this.allowed(tool);
  }
}

/** Compiled lists per config entry, with the arrays they were compiled from. */
const compiled = new WeakMap<ServerConfig, { allow: readonly string[] | undefined; deny: readonly string[]; lists: AllowDeny }>();

/**
 * The compiled `allow`/`deny` lists of one server's config entry. Compiled once per entry: the
 * pool asks for every listed tool and every call, and a reload brings new entries anyway. An
 * entry whose lists were swapped in place is compiled again.
 */
export function allowDenyOf(server: ServerConfig): AllowDeny {
  const cached = compiled.get(server);
  if (cached !== undefined && cached.allow === server.allow && cached.deny === server.deny) return cached.lists;
  const lists = new AllowDeny(server.allow, server.deny);
  compiled.set(server, { allow: server.allow, deny: server.deny, lists });
  return lists;
}

/**
 * True when `tool` of `server` passes its `allow`/`deny` lists: what the upstream pool exposes,
 * counts in a server's `toolCount` and lets be called. Given the config entry itself, not a
 * name, so the answer follows the entry a connection holds right now (a reload replaces it).
 */
export function exposesTool(server: ServerConfig, tool: string): boolean {
  return allowDenyOf(server).passes(tool);
}
