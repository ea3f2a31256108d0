import type { UpstreamPool } from "../upstream/upstreamPool.js";
import type { JsonObject, ServerStatus } from "../model/types.js";
import { compareStrings } from "../model/json.js";

/** What the aggregator needs of the config in force: looked up on every use, so a hot reload applies. */
export interface AggregatorNaming {
  separator: string;
  servers: readonly { name: string; prefix: boolean }[];
}

/** Where an aggregated resource, template or prompt came from. */
export interface Origin {
  server: string;
  /** The upstream's own name (prompts) or URI (resources). */
  original: string;
}

/**
 * Aggregates the resources, resource templates and prompts of every upstream that offers them.
 * Resource URIs stay as the upstream wrote them (they are addresses, which clients may show or
 * open); a read is routed by the URI seen in the last listing, then by template match. Names get
 * the server prefix, like tools (none for `prefix = false` servers). The config is read at each
 * use (a session outlives reloads), and what was learnt of a server that has since been removed
 * is forgotten rather than routed to.
 */
export class ResourceAggregator {
  private uriOwner = new Map<string, string>();
  private templates: { server: string; template: string; pattern: RegExp }[] = [];
  private promptOrigin = new Map<string, Origin>();

  constructor(
    private readonly pool: UpstreamPool,
    private readonly naming: () => AggregatorNaming,
  ) {}

  private servers(capability: "resources" | "prompts"): ServerStatus[] {
    return this.pool.servers().filter((s) => s.state === "ready" && s.capabilities?.[capability] !== undefined);
  }

  /** True while `server` is configured (a reload may have removed it). */
  private exists(server: string): boolean {
    return this.pool.status(server) !== undefined;
  }

  private exposed(server: string, name: string): string {
    const naming = this.naming();
    const prefix = naming.servers.find((s) => s.name === server)?.prefix !== false;
    return prefix ? `${server}${naming.separator}${name}` : name;
  }

  /**
   * The new map after a listing: what the servers that answered listed, plus what is known of
   * servers that still exist but did not answer this time (down, or failed to list).
   */
  private merged<V extends string | Origin>(old: Map<string, V>, fresh: Map<string, V>, answered: ReadonlySet<string>): Map<string, V> {
    const serverOf = (value: V): string => (typeof value === "string" ? value : value.server);
    const next = new Map(fresh);
    for (const [key, value] of old) {
      const server = serverOf(value);
      if (!next.has(key) && !answered.has(server) && this.exists(server)) next.set(key, value);
    }
    return next;
  }

  /**
   * Lists `method` of every ready server offering `capability`, all at once; the lists of those
   * that answered, in server order (a failing upstream is skipped, and not counted as answered).
   */
  private async listEvery(
    capability: "resources" | "prompts",
    method: string,
    key: string,
    signal: AbortSignal | undefined,
  ): Promise<{ server: string; items: JsonObject[] }[]> {
    const options = signal ? { signal } : {};
    const lists = await Promise.allSettled(
      this.servers(capability).map(async (s) => ({ server: s.name, items: await this.pool.listAll(s.name, method, key, options) })),
    );
    return lists.flatMap((list) => (list.status === "fulfilled" ? [list.value] : []));
  }

  /** Every upstream's resources; names prefixed, URIs kept. A failing upstream is skipped. */
  async listResources(signal?: AbortSignal): Promise<JsonObject[]> {
    const out: JsonObject[] = [];
    const lists = await this.listEvery("resources", "resources/list", "resources", signal);
    const owners = new Map<string, string>();
    const answered = new Set<string>();
    for (const { server, items } of lists) {
      answered.add(server);
      for (const item of items) {
        const uri = typeof item.uri === "string" ? item.uri : undefined;
        if (uri === undefined) continue;
        // Two servers listing one URI: the one that owned it keeps it, so reads do not move.
        const previous = this.uriOwner.get(uri);
        if (!owners.has(uri) || previous === server) owners.set(uri, server);
        out.push({ ...item, name: this.exposed(server, String(item.name ?? uri)) });
      }
    }
    this.uriOwner = this.merged(this.uriOwner, owners, answered);
    return out.sort((a, b) => compareStrings(String(a.name), String(b.name)));
  }

  /** Every upstream's resource templates; names prefixed, templates kept. */
  async listTemplates(signal?: AbortSignal): Promise<JsonObject[]> {
    const out: JsonObject[] = [];
    const templates: { server: string; template: string; pattern: RegExp }[] = [];
    for (const { server, items } of await this.listEvery("resources", "resources/templates/list", "resourceTemplates", signal)) {
      for (const item of items) {
        if (typeof item.uriTemplate !== "string") continue;
        templates.push({ server, template: item.uriTemplate, pattern: templatePattern(item.uriTemplate) });
        out.push({ ...item, name: this.exposed(server, String(item.name ?? item.uriTemplate)) });
      }
    }
    this.templates = templates;
    return out.sort((a, b) => compareStrings(String(a.name), String(b.name)));
  }

  /**
   * The server that serves `uri`: the one that listed it, else the first whose template matches,
   * else the only server with resources. Lists on demand when nothing is known yet.
   */
  async ownerOf(uri: string, signal?: AbortSignal): Promise<string | undefined> {
    const lookup = (): string | undefined => {
      const owner = this.uriOwner.get(uri);
      if (owner !== undefined && this.exists(owner)) return owner;
      if (owner !== undefined) this.uriOwner.delete(uri);
      return this.templates.find((t) => t.pattern.test(uri) && this.exists(t.server))?.server;
    };
    const known = lookup();
    if (known !== undefined) return known;
    await Promise.allSettled([this.listResources(signal), this.listTemplates(signal)]);
    const found = lookup();
    if (found !== undefined) return found;
    const candidates = this.servers("resources");
    return candidates.length === 1 ? candidates[0]!.name : undefined;
  }

  /**
   * The server that lists the resource template `uriTemplate` (a `ref/resource` of
   * `completion/complete` names a template, not a resource); falls back to {@link ownerOf}.
   */
  async templateOwnerOf(uriTemplate: string, signal?: AbortSignal): Promise<string | undefined> {
    const listed = (): string | undefined => this.templates.find((t) => t.template === uriTemplate && this.exists(t.server))?.server;
    if (listed() === undefined) await this.listTemplates(signal).catch(() => undefined);
    return listed() ?? this.ownerOf(uriTemplate, signal);
  }

  /** Every upstream's prompts under exposed names. */
  async listPrompts(signal?: AbortSignal): Promise<JsonObject[]> {
    const out: JsonObject[] = [];
    const origins = new Map<string, Origin>();
    const answered = new Set<string>();
    for (const { server, items } of await this.listEvery("prompts", "prompts/list", "prompts", signal)) {
      answered.add(server);
      for (const item of items) {
        if (typeof item.name !== "string") continue;
        const name = this.exposed(server, item.name);
        origins.set(name, { server, original: item.name });
        out.push({ ...item, name });
      }
    }
    // Rebuilt, not added to: after a prefix change the old names must stop resolving.
    this.promptOrigin = this.merged(this.promptOrigin, origins, answered);
    return out.sort((a, b) => compareStrings(String(a.name), String(b.name)));
  }

  /** Where the prompt exposed as `name` lives (lists on demand, and again when its server is gone). */
  async promptOriginOf(name: string, signal?: AbortSignal): Promise<Origin | undefined> {
    const known = this.promptOrigin.get(name);
    if (known !== undefined && this.exists(known.server)) return known;
    await this.listPrompts(signal);
    const found = this.promptOrigin.get(name);
    return found !== undefined && this.exists(found.server) ? found : undefined;
  }
}

/** A regular expression for an RFC 6570 URI template (each `{...}` expression matches anything). */
export function templatePattern(template: string): RegExp {
  const parts = template.split(/\{[^}]*\}/).map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
  return new RegExp(`^${parts.join(".+?")}$`);
}
