import type { SSEClientTransportOptions } from "@modelcontextprotocol/sdk/client/sse.js";
import type { StreamableHTTPClientTransportOptions } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport, TransportSendOptions } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage, MessageExtraInfo } from "@modelcontextprotocol/sdk/types.js";

/**
 * The SDK's HTTP client transports, loaded when the first HTTP or SSE upstream connects. With
 * their OAuth client, event-source reader and the OAuth metadata schemas they build on load, they
 * were a tenth of what `abridge serve` loaded before it could answer `initialize`, and a bridge
 * whose upstreams are all stdio children never uses them.
 */
type HttpModules = {
  streamable: typeof import("@modelcontextprotocol/sdk/client/streamableHttp.js");
  sse: typeof import("@modelcontextprotocol/sdk/client/sse.js");
};

let loaded: HttpModules | undefined;
let loading: Promise<HttpModules> | undefined;

/** Loads the SDK's HTTP client transports (once per process); a transport's start does it. */
export function loadHttpTransports(): Promise<HttpModules> {
  loading ??= Promise.all([import("@modelcontextprotocol/sdk/client/streamableHttp.js"), import("@modelcontextprotocol/sdk/client/sse.js")]).then(
    ([streamable, sse]) => (loaded = { streamable, sse }),
    (err: unknown) => {
      loading = undefined;
      throw err;
    },
  );
  return loading;
}

/**
 * Whether `err` is the SDK's `StreamableHTTPError` (an HTTP status the streamable transport got
 * instead of an answer). Without its module loaded no such error can have been made, so the check
 * needs no import of its own.
 */
export function isStreamableHttpError(err: unknown): err is InstanceType<HttpModules["streamable"]["StreamableHTTPError"]> {
  return loaded !== undefined && err instanceof loaded.streamable.StreamableHTTPError;
}

/** What kind of SDK transport a {@link LazyHttpTransport} becomes, and what it is made with. */
export type HttpTransportSpec =
  | { kind: "streamable-http"; url: URL; options: StreamableHTTPClientTransportOptions }
  | { kind: "sse"; url: URL; options: SSEClientTransportOptions };

/**
 * An HTTP or SSE client transport made when it starts: `start()` loads the SDK's transport module
 * (once per process), makes the transport and starts it. Everything the SDK's client and abridge
 * ask of a transport before it starts (its handlers, `sessionId`) is answered as the real
 * transport would answer it unstarted; after, each call goes to it.
 */
export class LazyHttpTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: <T extends JSONRPCMessage>(message: T, extra?: MessageExtraInfo) => void;
  private inner: Transport | undefined;
  private closed = false;

  constructor(private readonly spec: HttpTransportSpec) {}

  async start(): Promise<void> {
    const modules = await loadHttpTransports();
    if (this.closed) throw new Error("the transport was closed before it started");
    const spec = this.spec;
    const inner: Transport =
      spec.kind === "sse"
        ? new modules.sse.SSEClientTransport(spec.url, spec.options)
        : new modules.streamable.StreamableHTTPClientTransport(spec.url, spec.options);
    inner.onclose = () => this.onclose?.();
    inner.onerror = (error) => this.onerror?.(error);
    inner.onmessage = (message, extra) => this.onmessage?.(message, extra);
    this.inner = inner;
    await inner.start();
  }

  send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    if (this.inner === undefined) return Promise.reject(new Error("Not connected"));
    return this.inner.send(message, options);
  }

  async close(): Promise<void> {
    if (this.inner !== undefined) return this.inner.close();
    // Unstarted: the SDK's transports close without a request and still tell their owner. A start
    // still loading the module is refused, so no stream opens that nobody will close.
    this.closed = true;
    this.onclose?.();
  }

  get sessionId(): string | undefined {
    return this.inner?.sessionId;
  }

  setProtocolVersion(version: string): void {
    this.inner?.setProtocolVersion?.(version);
  }
}
