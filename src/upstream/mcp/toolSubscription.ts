import { z } from "zod";
import type { Logger } from "../../log/logger.js";
import { messageOf } from "../../model/errors.js";
import type { UpstreamClient } from "./upstreamClient.js";

/** The answer that ends a subscription, whatever it holds. */
const listenResult = z.looseObject({});
/** setTimeout's ceiling: a subscription lasts as long as the connection. */
const MAX_LISTEN_MS = 2_147_483_647;

/**
 * A stateless server that says its tool list can change (`tools.listChanged` in
 * `server/discover`) tells only the clients that listen: one `subscriptions/listen` request for
 * `toolsListChanged` stays open for the connection's life (ended by `signal`), and the
 * `tools/list_changed` notifications it brings reach the client's handler as an older server's
 * do. A server that refuses it is left to its `ttlMs` (see ttlRelist.ts); `current` tells whether
 * the connection is still the one this was started for, so a stale outcome is not logged.
 */
export function listenForToolChanges(client: UpstreamClient, signal: AbortSignal, logger: Logger, current: () => boolean): void {
  const tools = client.getServerCapabilities()?.tools;
  if (client.era !== "stateless" || tools?.listChanged !== true) return;
  const params = client.withEnvelope({ notifications: { toolsListChanged: true } });
  client.request({ method: "subscriptions/listen", params }, listenResult, { timeout: MAX_LISTEN_MS, signal }).then(
    () => {
      if (current()) logger.debug("the server ended the tools subscription");
    },
    (err: unknown) => {
      if (current() && !signal.aborted) logger.debug("subscriptions/listen failed; ttlMs alone says when to re-list", { error: messageOf(err) });
    },
  );
}
