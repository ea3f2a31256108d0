import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
  LoggingMessageNotificationSchema,
  ProgressNotificationSchema,
  PromptListChangedNotificationSchema,
  ResourceListChangedNotificationSchema,
  ResourceUpdatedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { Protocol } from "@modelcontextprotocol/sdk/shared/protocol.js";
import type { RequestOptions } from "@modelcontextprotocol/sdk/shared/protocol.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { InitializeResultSchema, LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS } from "@modelcontextprotocol/sdk/types.js";
import type { ClientCapabilities, Implementation, ServerCapabilities } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { isObject } from "../../model/json.js";
import type { JsonObject, UpstreamNotification } from "../../model/types.js";
import type { CallForwarder } from "./callForwarder.js";
import { META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_PROTOCOL_VERSION } from "../../model/mcpRevision.js";
import { requestEnvelope } from "./protocolEra.js";
import type { DiscoverResult, ProtocolEra } from "./protocolEra.js";
import type { HeaderDeclaration } from "./paramHeaders.js";
import type { RequestRelay } from "./requestRelay.js";
import { VERSION } from "../../model/version.js";
import { lazyValidator } from "../../util/lazyValidator.js";

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

/** One validator for every upstream client, made on first use (50 upstreams paid for 50 in the middle of their start). */
const sharedValidator = lazyValidator();

/**
 * What abridge declares in `initialize`, as in the stateless envelope (CLIENT_CAPABILITIES of
 * protocolEra.ts): the requests it relays to the calling client. Roots without `listChanged`:
 * abridge does not pass a client's roots/list_changed on (upstreams are shared by clients, so one
 * client's change is not the upstream's to hear); an upstream asks again per call.
 */
const HANDSHAKE_CAPABILITIES: ClientCapabilities = { sampling: {}, elicitation: {}, roots: {} };

/**
 * An SDK client that can take what an upstream sends back during a call: sampling, elicitation
 * and roots requests (relayed to the calling client, so they are declared as capabilities),
 * progress, log lines and resource notifications.
 */
export function createUpstreamClient(clientInfo: ClientInfo, routes: UpstreamClientRoutes): UpstreamClient {
  const { forwarder, relay, onNotification } = routes;
  const client = new UpstreamClient(clientInfo, { capabilities: HANDSHAKE_CAPABILITIES, jsonSchemaValidator: sharedValidator });
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
  client.setRequestHandler(
    ListRootsRequestSchema,
    (request, extra) => relay.request(request.method, (request.params ?? {}) as JsonObject, extra.signal) as never,
  );
  return client;
}

/** The `_meta` keys of the stateless request envelope. */
const ENVELOPE_KEYS: readonly string[] = [META_PROTOCOL_VERSION, META_CLIENT_INFO, META_CLIENT_CAPABILITIES];

/** Any result object, kept as sent. */
const looseResult = z.looseObject({});

/**
 * The SDK's client, able to speak either revision over one transport: the initialize handshake
 * (`connect`, or {@link initializeAfterProbe} once a `server/discover` probe found no stateless
 * server) or the stateless revision 2026-07-28 ({@link attach} with no handshake, then every
 * request carrying the `_meta` envelope of {@link withEnvelope}). What the server told of itself
 * (capabilities, name, instructions) is read the same way for both.
 */
export class UpstreamClient extends Client {
  /** The revision in use; undefined until connected. */
  era: ProtocolEra | undefined;
  /** The `ttlMs` of the last `tools/list` page of a stateless server (a hint of when to list again). */
  lastListTtlMs: number | undefined;
  /** The `x-mcp-header` declarations of the last listed tools, by tool (stateless only; see paramHeaders.ts). */
  headerDeclarations = new Map<string, HeaderDeclaration[]>();
  private readonly info: ClientInfo;
  private readonly envelope: JsonObject;
  private known: { capabilities?: ServerCapabilities; serverInfo?: Implementation; instructions?: string } | undefined;

  constructor(info: ClientInfo, options: ConstructorParameters<typeof Client>[1]) {
    super(info, options);
    this.info = info;
    this.envelope = requestEnvelope(info);
  }

  /** Connects over `transport` without any handshake (the probe, or a server known to be stateless). */
  async attach(transport: Transport): Promise<void> {
    await Protocol.prototype.connect.call(this, transport);
  }

  /** Sends `server/discover` with the envelope; resolves with the raw result (see protocolEra.ts classifyProbe). */
  discover(options: RequestOptions): Promise<JsonObject> {
    return this.request({ method: "server/discover", params: { _meta: this.envelope } }, looseResult, options);
  }

  /** The probe found a stateless server: every later request carries the envelope. */
  useStateless(discover: DiscoverResult): void {
    this.era = "stateless";
    this.known = {
      capabilities: discover.capabilities as ServerCapabilities,
      ...(discover.serverInfo ? { serverInfo: discover.serverInfo } : {}),
      ...(discover.instructions !== undefined ? { instructions: discover.instructions } : {}),
    };
  }

  /**
   * The initialize handshake over the transport the probe used (the SDK's `connect` would start
   * the transport again): what `connect` does after starting it, with the same checks.
   */
  async initializeAfterProbe(options: RequestOptions): Promise<void> {
    const result = await this.request(
      { method: "initialize", params: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: HANDSHAKE_CAPABILITIES, clientInfo: { ...this.info } } },
      InitializeResultSchema,
      options,
    );
    if (!SUPPORTED_PROTOCOL_VERSIONS.includes(result.protocolVersion)) {
      throw new Error(`Server's protocol version is not supported: ${result.protocolVersion}`);
    }
    this.known = {
      capabilities: result.capabilities,
      serverInfo: result.serverInfo,
      ...(result.instructions !== undefined ? { instructions: result.instructions } : {}),
    };
    this.transport?.setProtocolVersion?.(result.protocolVersion);
    await this.notification({ method: "notifications/initialized" });
    this.era = "legacy";
  }

  /**
   * `params` as this client sends them: over 2026-07-28 with abridge's own envelope in `_meta`
   * (abridge is the client here: an envelope that came with the caller's params, from a stateless
   * client in front, names that client and is replaced); over the older revisions without any
   * envelope key, which would make the request look stateless to a server of both revisions.
   */
  withEnvelope(params: JsonObject): JsonObject {
    const meta = isObject(params._meta) ? params._meta : undefined;
    if (this.era === "stateless") return { ...params, _meta: { ...meta, ...this.envelope } };
    if (meta === undefined || !ENVELOPE_KEYS.some((key) => key in meta)) return params;
    const kept = Object.fromEntries(Object.entries(meta).filter(([key]) => !ENVELOPE_KEYS.includes(key)));
    return { ...params, _meta: kept };
  }

  override getServerCapabilities(): ServerCapabilities | undefined {
    return this.known ? this.known.capabilities : super.getServerCapabilities();
  }

  override getServerVersion(): Implementation | undefined {
    return this.known ? this.known.serverInfo : super.getServerVersion();
  }

  override getInstructions(): string | undefined {
    return this.known ? this.known.instructions : super.getInstructions();
  }
}

/** `params` with the stateless envelope when `client` speaks 2026-07-28 (see {@link UpstreamClient.withEnvelope}). */
export function withEnvelope(client: Client, params: JsonObject): JsonObject {
  return client instanceof UpstreamClient ? client.withEnvelope(params) : params;
}
