import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  LoggingMessageNotificationSchema,
  ProgressNotificationSchema,
  PromptListChangedNotificationSchema,
  ResourceListChangedNotificationSchema,
  ResourceUpdatedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";
import type { JsonObject, UpstreamNotification } from "../model/types.js";
import type { CallForwarder } from "./callForwarder.js";
import type { RequestRelay } from "./requestRelay.js";

/** Name and version abridge introduces itself with in `initialize`. */
export interface ClientInfo {
  name: string;
  version: string;
}

/** Default `clientInfo`. */
export const DEFAULT_CLIENT_INFO: ClientInfo = { name: "abridge", version: "0.1.0" };

/** Where an upstream client sends what the upstream sends on its own. */
export interface UpstreamClientRoutes {
  /** Takes progress notifications, by token. */
  forwarder: CallForwarder;
  /** Takes sampling and elicitation requests, and log lines. */
  relay: RequestRelay;
  /** Takes resources/updated and the resource and prompt list_changed notifications. */
  onNotification?: (notification: UpstreamNotification) => void;
}

/**
 * An SDK client that can take what an upstream sends back during a call: sampling and
 * elicitation requests (relayed to the calling client, so they are declared as capabilities),
 * progress, log lines and resource notifications.
 */
export function createUpstreamClient(clientInfo: ClientInfo, routes: UpstreamClientRoutes): Client {
  const { forwarder, relay, onNotification } = routes;
  const client = new Client(clientInfo, { capabilities: { sampling: {}, elicitation: {} } });
  client.setNotificationHandler(ProgressNotificationSchema, (n) => {
    const { progressToken, progress, total, message } = n.params;
    forwarder.progress(String(progressToken), {
      progress,
      ...(total !== undefined ? { total } : {}),
      ...(message !== undefined ? { message } : {}),
    });
  });
  // A log line during one client's calls belongs to that client; anything else is server-wide.
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => relay.log({ method: n.method, params: n.params as JsonObject }));
  for (const schema of [ResourceUpdatedNotificationSchema, ResourceListChangedNotificationSchema, PromptListChangedNotificationSchema]) {
    client.setNotificationHandler(schema, (n) => onNotification?.({ method: n.method, params: (n.params ?? {}) as JsonObject }));
  }
  client.setRequestHandler(CreateMessageRequestSchema, (request, extra) => relay.request(request.method, request.params as JsonObject, extra.signal) as never);
  client.setRequestHandler(ElicitRequestSchema, (request, extra) => relay.request(request.method, request.params as JsonObject, extra.signal) as never);
  return client;
}
