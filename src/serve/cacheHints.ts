import type { Mode } from "../config/schema.js";
import type { Bridge } from "../core/bridge.js";

/** A list still settling (upstreams starting, summaries to land in a mode that shows them) is good for 5 s. */
export const SETTLING_TTL_MS = 5_000;
/** A settled tool list (or discover result) is good for 5 minutes: a change is announced on `subscriptions/listen`. */
export const SETTLED_TTL_MS = 300_000;
/** A settled prompt or resource list: 1 minute, since an upstream may change it without saying so. */
export const UPSTREAM_LIST_TTL_MS = 60_000;

/** What {@link cacheHint} needs to know. */
export interface CacheHintOptions {
  bridge: Bridge;
  mode: Mode;
  /** A bearer token guards the server: what it lists is for the holders of that token only. */
  privateLists: boolean;
}

/** The caching hints of a 2026-07-28 result (SEP-2549). */
export interface CacheHint {
  ttlMs: number;
  cacheScope: "public" | "private";
}

/** True while an upstream is still connecting or restarting: its tools, prompts and resources are still to come. */
function upstreamsSettling(bridge: Bridge): boolean {
  return bridge.servers().some((status) => status.state === "connecting" || status.state === "restarting");
}

/** True while summaries are queued or being written and the mode shows them: the list will change when they land. */
function summariesPending(bridge: Bridge, mode: Mode): boolean {
  if (mode === "full") return false;
  const { queued, running, waiting } = bridge.stats().queue;
  return queued + running + waiting > 0;
}

/**
 * `ttlMs` and `cacheScope` for a result of `method`, from what abridge itself knows of how soon
 * it will change. The tool list is rendered from abridge's catalog and summary cache: while
 * summaries are pending (in a mode that shows them) or an upstream is still starting it will
 * change soon, so it gets {@link SETTLING_TTL_MS}; settled, {@link SETTLED_TTL_MS}. Prompt and
 * resource lists are the upstreams', who may change them unannounced: {@link UPSTREAM_LIST_TTL_MS}.
 * A resource read is the upstream's content of the moment: 0 (use once).
 *
 * Scope: `private` wherever the answer depends on who asks. Behind a bearer token every answer
 * is for that token's holders only; a resource's content may come from the user's own
 * credentials upstream, so a read is always private. Otherwise lists are the same for every
 * client of this abridge (they follow its config, not the caller) and are `public`.
 */
export function cacheHint(method: string, options: CacheHintOptions): CacheHint {
  const { bridge, mode, privateLists } = options;
  const cacheScope = privateLists || method === "resources/read" ? "private" : "public";
  switch (method) {
    case "tools/list":
      return { ttlMs: upstreamsSettling(bridge) || summariesPending(bridge, mode) ? SETTLING_TTL_MS : SETTLED_TTL_MS, cacheScope };
    case "server/discover":
      return { ttlMs: SETTLED_TTL_MS, cacheScope };
    case "resources/read":
      return { ttlMs: 0, cacheScope };
    default:
      return { ttlMs: upstreamsSettling(bridge) ? SETTLING_TTL_MS : UPSTREAM_LIST_TTL_MS, cacheScope };
  }
}
