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
import { AjvJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/ajv-provider.js";
import type { jsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/types.js";
import type { JsonObject, UpstreamNotification } from "../model/types.js";
import type { CallForwarder } from "./callForwarder.js";
import type { RequestRelay } from "./requestRelay.js";
import { VERSION } from "../model/version.js";

/** Name and version abridge introduces itself with in `initialize`. */
export interface ClientInfo {
  name: string;
  version: string;
}

/** Default `clientInfo`. */
export const DEFAULT_CLIENT_INFO: ClientInfo = { name: "abridge", version: VERSION };

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
 * One JSON Schema validator for every upstream client, made on first use. The SDK gives each
 * `Client` an Ajv instance of its own (about 1 ms of CPU each, with its formats), used only by the
 * SDK's own `listTools()` to compile output-schema checks for `callTool()`; abridge sends both as
 * plain requests (a proxy must not validate what it forwards), so the instance is never used, yet
 * 50 upstreams paid for 50 of them in the middle of their start. Made on first use, shared: a
 * compiled validator is per schema, so sharing changes no result.
 */
let sharedAjv: AjvJsonSchemaValidator | undefined;
const sharedValidator: jsonSchemaValidator = {
  getValidator: (schema) => (sharedAjv ??= new AjvJsonSchemaValidator()).getValidator(schema),
};

/**
 * An SDK client that can take what an upstream sends back during a call: sampling and
 * elicitation requests (relayed to the calling client, so they are declared as capabilities),
 * progress, log lines and resource notifications.
 */
export function createUpstreamClient(clientInfo: ClientInfo, routes: UpstreamClientRoutes): Client {
  const { forwarder, relay, onNotification } = routes;
  const client = new Client(clientInfo, { capabilities: { sampling: {}, elicitation: {} }, jsonSchemaValidator: sharedValidator });
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
