import type { UpstreamPool } from "../upstream/upstreamPool.js";
import type { JsonObject, ServerStatus } from "../upstream/types.js";
import { compareStrings } from "../upstream/naming.js";

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
 * the server prefix, like tools (none for `prefix = false` servers).
 */
export class ResourceAggregator {
  private readonly uriOwner = new Map<string, string>();
  private templates: { server: string; template: string; pattern: RegExp }[] = [];
  private readonly promptOrigin = new Map<string, Origin>();

  constructor(
    private readonly pool: UpstreamPool,
    private readonly separator: string,
    private readonly prefixOf: (server: string) => boolean,
  ) {}

  private servers(capability: "resources" | "prompts"): ServerStatus[] {
    return this.pool.servers().filter((s) => s.state === "ready" && s.capabilities?.[capability] !== undefined);
  }

  private exposed(server: string, name: string): string {
    return this.prefixOf(server) ? `${server}${this.separator}${name}` : name;
  }

  /** Every upstream's resources; names prefixed, URIs kept. A failing upstream is skipped. */
  async listResources(signal?: AbortSignal): Promise<JsonObject[]> {
    const out: JsonObject[] = [];
    const lists = await Promise.allSettled(
      this.servers("resources").map(async (s) => ({ server: s.name, items: await this.pool.listAll(s.name, "resources/list", "resources", { ...(signal ? { signal } : {}) }) })),
    );
    for (const list of lists) {
      if (list.status !== "fulfilled") continue;
      for (const item of list.value.items) {
        const uri = typeof item.uri === "string" ? item.uri : undefined;
        if (uri === undefined) continue;
        if (!this.uriOwner.has(uri)) this.uriOwner.set(uri, list.value.server);
        out.push({ ...item, name: this.exposed(list.value.server, String(item.name ?? uri)) });
      }
    }
    return out.sort((a, b) => compareStrings(String(a.name), String(b.name)));
  }

  /** Every upstream's resource templates; names prefixed, templates kept. */
  async listTemplates(signal?: AbortSignal): Promise<JsonObject[]> {
    const out: JsonObject[] = [];
    const templates: { server: string; template: string; pattern: RegExp }[] = [];
    const lists = await Promise.allSettled(
      this.servers("resources").map(async (s) => ({
        server: s.name,
        items: await this.pool.listAll(s.name, "resources/templates/list", "resourceTemplates", { ...(signal ? { signal } : {}) }),
      })),
    );
    for (const list of lists) {
      if (list.status !== "fulfilled") continue;
      for (const item of list.value.items) {
        if (typeof item.uriTemplate !== "string") continue;
        templates.push({ server: list.value.server, template: item.uriTemplate, pattern: templatePattern(item.uriTemplate) });
        out.push({ ...item, name: this.exposed(list.value.server, String(item.name ?? item.uriTemplate)) });
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
    const known = this.uriOwner.get(uri) ?? this.templates.find((t) => t.pattern.test(uri))?.server;
    if (known !== undefined) return known;
    await Promise.allSettled([this.listResources(signal), this.listTemplates(signal)]);
    const found = this.uriOwner.get(uri) ?? this.templates.find((t) => t.pattern.test(uri))?.server;
    if (found !== undefined) return found;
    const candidates = this.servers("resources");
    return candidates.length === 1 ? candidates[0]!.name : undefined;
  }

  /**
   * The server that lists the resource template `uriTemplate` (a `ref/resource` of
   * `completion/complete` names a template, not a resource); falls back to {@link ownerOf}.
   */
  async templateOwnerOf(uriTemplate: string, signal?: AbortSignal): Promise<string | undefined> {
    const listed = (): string | undefined => this.templates.find((t) => t.template === uriTemplate)?.server;
    if (listed() === undefined) await this.listTemplates(signal).catch(() => undefined);
    return listed() ?? this.ownerOf(uriTemplate, signal);
  }

  /** Every upstream's prompts under exposed names. */
  async listPrompts(signal?: AbortSignal): Promise<JsonObject[]> {
    const out: JsonObject[] = [];
    const lists = await Promise.allSettled(
      this.servers("prompts").map(async (s) => ({ server: s.name, items: await this.pool.listAll(s.name, "prompts/list", "prompts", { ...(signal ? { signal } : {}) }) })),
    );
    for (const list of lists) {
      if (list.status !== "fulfilled") continue;
      for (const item of list.value.items) {
        if (typeof item.name !== "string") continue;
        const name = this.exposed(list.value.server, item.name);
        this.promptOrigin.set(name, { server: list.value.server, original: item.name });
        out.push({ ...item, name });
      }
    }
    return out.sort((a, b) => compareStrings(String(a.name), String(b.name)));
  }

  /** Where the prompt exposed as `name` lives (lists on demand). */
  async promptOriginOf(name: string, signal?: AbortSignal): Promise<Origin | undefined> {
    if (!this.promptOrigin.has(name)) await this.listPrompts(signal);
    return this.promptOrigin.get(name);
  }
}

/** A regular expression for an RFC 6570 URI template (each `{...}` expression matches anything). */
export function templatePattern(template: string): RegExp {
  const parts = template.split(/\{[^}]*\}/).map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
  return new RegExp(`^${parts.join(".+?")}$`);
}
