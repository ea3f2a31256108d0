import type { Config } from "../config/schema.js";
import { AbridgeError, ErrorCode } from "../model/errors.js";
import { isObject } from "../model/json.js";
import type { ClientRelay, JsonObject } from "../model/types.js";
import type { CallGuard } from "../policy/callGuard.js";
import type { UpstreamPool } from "../upstream/upstreamPool.js";
import { ResourceAggregator } from "./resourceAggregator.js";

/** Options of a resource or prompt request made through the bridge. */
export interface ResourceRequestOptions {
  signal?: AbortSignal;
  /** Who is asking, for the audit log (`stdio`, `http`, ...). */
  client?: string;
  /**
   * The client behind the request, for what the upstream asks of it while answering (an
   * elicitation during prompts/get, its roots): as a tool call's relay. None: the CLI, the daemon.
   */
  relay?: ClientRelay;
}

/** A subscription to updates of one resource, held until {@link ResourceAccess.unsubscribe}. */
export interface ResourceSubscription {
  uri: string;
  /** The server whose `notifications/resources/updated` of `uri` belong to this subscription. */
  server: string;
}

/** What a {@link ResourceAccess} works with. */
export interface ResourceAccessParts {
  pool: UpstreamPool;
  guard: CallGuard;
  /** The config in force (a reload replaces it). */
  config: () => Config;
  /** Lists wait for upstreams still starting, as a first `tools/list` does. */
  waitReady: (graceMs: number, signal?: AbortSignal) => Promise<boolean>;
}

/**
 * Resources, resource templates, prompts, completion and subscriptions of every upstream, under
 * the same rules as tool calls: a resource read and a prompt get are audited, marked as untrusted
 * output of their server and held to its `max_output_bytes`. Each request first gives upstreams
 * still starting the `startup_grace_ms` a first list gets.
 */
export class ResourceAccess {
  private readonly aggregator: ResourceAggregator;

  constructor(private readonly parts: ResourceAccessParts) {
    // The config is looked up per request, not kept: a reload may add, remove or rename servers.
    this.aggregator = new ResourceAggregator(parts.pool, parts.config);
  }

  private grace(signal?: AbortSignal): Promise<boolean> {
    return this.parts.waitReady(this.parts.config().startup_grace_ms, signal);
  }

  /** Every upstream's resources; names prefixed, URIs kept. */
  async listResources(signal?: AbortSignal): Promise<JsonObject[]> {
    await this.grace(signal);
    return this.aggregator.listResources(signal);
  }

  /** Every upstream's resource templates; names prefixed, templates kept. */
  async listResourceTemplates(signal?: AbortSignal): Promise<JsonObject[]> {
    await this.grace(signal);
    return this.aggregator.listTemplates(signal);
  }

  /** Every upstream's prompts under exposed names. */
  async listPrompts(signal?: AbortSignal): Promise<JsonObject[]> {
    await this.grace(signal);
    return this.aggregator.listPrompts(signal);
  }

  /**
   * Reads a resource from the server that owns `params.uri`: audited (`resources/read`, the URI as
   * its argument), marked untrusted, limited to the owner's `max_output_bytes`.
   *
   * @throws AbridgeError RESOURCE_NOT_FOUND when no server offers the URI.
   */
  async readResource(params: JsonObject & { uri: string }, options: ResourceRequestOptions = {}): Promise<JsonObject> {
    await this.grace(options.signal);
    const owner = await this.aggregator.ownerOf(params.uri, options.signal);
    if (owner === undefined) throw notFound(`resource "${params.uri}"`);
    return this.guarded(owner, "resources/read", params, { uri: params.uri }, options, (result) => this.parts.guard.finishRead(owner, result, params.uri));
  }

  /**
   * Gets a prompt by its exposed name from the server that lists it: audited (`prompts/get`, the
   * upstream's name and the arguments as its argument), marked untrusted, limited to the owner's
   * `max_output_bytes`.
   *
   * @throws AbridgeError RESOURCE_NOT_FOUND when no server lists the prompt.
   */
  async getPrompt(params: JsonObject & { name: string }, options: ResourceRequestOptions = {}): Promise<JsonObject> {
    await this.grace(options.signal);
    const origin = await this.aggregator.promptOriginOf(params.name, options.signal);
    if (origin === undefined) throw notFound(`prompt "${params.name}"`);
    const forwarded = { ...params, name: origin.original };
    const audited = { name: origin.original, ...(params.arguments !== undefined ? { arguments: params.arguments } : {}) };
    return this.guarded(origin.server, "prompts/get", forwarded, audited, options, (result) => this.parts.guard.finishRead(origin.server, result));
  }

  /**
   * `completion/complete` for a prompt (`ref/prompt`, by exposed name) or a resource template
   * (`ref/resource`), asked of the server that owns it; a server without completions has none to
   * offer, which is an empty answer rather than an error.
   *
   * @throws AbridgeError RESOURCE_NOT_FOUND when no server owns the reference.
   */
  async complete(params: JsonObject & { ref: { type: string; name?: string; uri?: string } }, signal?: AbortSignal): Promise<JsonObject> {
    const ref = params.ref;
    await this.grace(signal);
    let owner: string | undefined;
    let forwarded: JsonObject = params;
    if (ref.type === "ref/prompt") {
      const origin = await this.aggregator.promptOriginOf(String(ref.name), signal);
      owner = origin?.server;
      if (origin) forwarded = { ...params, ref: { ...ref, name: origin.original } };
    } else {
      owner = await this.aggregator.templateOwnerOf(String(ref.uri), signal);
    }
    if (owner === undefined) throw notFound(ref.type === "ref/prompt" ? `prompt "${ref.name}"` : `resource template "${ref.uri}"`);
    if (this.capability(owner, "completions") === undefined) return { completion: { values: [], hasMore: false } };
    return this.parts.pool.request(owner, "completion/complete", forwarded, signal ? { signal } : {});
  }

  /**
   * Subscribes to updates of `uri` at the server that owns it (asked once however many clients
   * subscribe). Pair with {@link unsubscribe}.
   *
   * @throws AbridgeError RESOURCE_NOT_FOUND for an unknown URI, CAPABILITY_UNSUPPORTED when its
   *   server offers no subscriptions.
   */
  async subscribe(uri: string, signal?: AbortSignal): Promise<ResourceSubscription> {
    await this.grace(signal);
    const owner = await this.aggregator.ownerOf(uri, signal);
    if (owner === undefined) throw notFound(`resource "${uri}"`);
    if (this.capability(owner, "resources")?.subscribe !== true) {
      throw new AbridgeError(ErrorCode.CAPABILITY_UNSUPPORTED, `server "${owner}" does not support resource subscriptions`, { details: { server: owner } });
    }
    await this.parts.pool.subscribeResource(owner, uri, signal ? { signal } : {});
    return { uri, server: owner };
  }

  /** Ends a subscription of {@link subscribe}. */
  unsubscribe(subscription: ResourceSubscription, signal?: AbortSignal): Promise<void> {
    return this.parts.pool.unsubscribeResource(subscription.server, subscription.uri, signal ? { signal } : {});
  }

  private capability(server: string, key: string): JsonObject | undefined {
    const value = this.parts.pool.status(server)?.capabilities?.[key];
    return isObject(value) ? value : undefined;
  }

  /** Forwards one request to `server`, hands its result to `finish` and audits the outcome. */
  private async guarded(
    server: string,
    method: string,
    params: JsonObject,
    auditedArgs: JsonObject,
    options: ResourceRequestOptions,
    finish: (result: JsonObject) => JsonObject,
  ): Promise<JsonObject> {
    const { guard, pool } = this.parts;
    const event = { ...(options.client !== undefined ? { client: options.client } : {}), server, tool: method, args: auditedArgs, startedMs: Date.now() };
    try {
      const forward = { ...(options.signal ? { signal: options.signal } : {}), ...(options.relay ? { relay: options.relay } : {}) };
      const result = finish(await pool.request(server, method, params, forward));
      await guard.audit({ ...event, outcome: "ok" });
      return result;
    } catch (err) {
      const code = err instanceof AbridgeError ? err.code : ErrorCode.INTERNAL;
      await guard.audit({ ...event, outcome: code === ErrorCode.CANCELLED ? "cancelled" : "error", errorCode: code });
      throw err;
    }
  }
}

function notFound(what: string): AbridgeError {
  return new AbridgeError(ErrorCode.RESOURCE_NOT_FOUND, `unknown ${what}`);
}
