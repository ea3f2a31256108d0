import { connect, type NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "../log/logger.js";
import { AbridgeError, ErrorCode } from "../model/errors.js";

/**
 * Opening a NATS connection the same way for the bus worker and the host-side client: the URL
 * checked first (a typo is a clear error, not a reconnect loop), a bounded first connect, and
 * reconnects after that for good, with one line logged per outage.
 */

/** How long the first connect may take. */
export const NATS_CONNECT_TIMEOUT_MS = 10_000;
/** Pause between reconnect attempts once connected (the client adds jitter). */
const RECONNECT_WAIT_MS = 1_000;

/** A checked NATS server URL. */
export interface NatsUrl {
  /** What the client connects to and what logs and messages show: `nats://host:port`, no credentials. */
  server: string;
  /** User and password from the URL (the client takes them as options, not in the URL). */
  user?: string;
  pass?: string;
  /** The credentials again, for the logger's redaction. */
  secrets: string[];
}

/**
 * Checks a `nats://HOST:PORT` URL (port default 4222; `tls://` too).
 *
 * @returns the URL, or the problem as a sentence.
 */
export function parseNatsUrl(text: string): NatsUrl | { problem: string } {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return { problem: `expected a URL such as nats://127.0.0.1:4222, got ${JSON.stringify(text)}` };
  }
  if (url.protocol !== "nats:" && url.protocol !== "tls:") {
    return { problem: `expected the scheme nats:// (or tls://), got ${JSON.stringify(url.protocol.replace(/:$/, ""))} in ${JSON.stringify(redactUrl(url))}` };
  }
  if (url.hostname === "") return { problem: `no host in ${JSON.stringify(text)}` };
  if ((url.pathname !== "" && url.pathname !== "/") || url.search !== "" || url.hash !== "") {
    return { problem: `expected only scheme, host and port, got ${JSON.stringify(redactUrl(url))}` };
  }
  const port = url.port === "" ? 4222 : Number(url.port);
  if (port === 0) return { problem: `port 0 is not a server's port in ${JSON.stringify(redactUrl(url))}` };
  const host = url.hostname;
  const user = decodeURIComponent(url.username);
  const pass = decodeURIComponent(url.password);
  return {
    server: `${url.protocol}//${host}:${port}`,
    ...(user !== "" ? { user } : {}),
    ...(pass !== "" ? { pass } : {}),
    secrets: [user, pass].filter((s) => s !== ""),
  };
}

function redactUrl(url: URL): string {
  const copy = new URL(url.href);
  if (copy.password !== "") copy.password = "***";
  return copy.href;
}

/** Options of {@link connectNats}. */
export interface ConnectNatsOptions {
  url: NatsUrl;
  /** The connection's name as the NATS server shows it (`abridge-bus:<agent>`). */
  name: string;
  logger: Logger;
  timeoutMs?: number;
}

/**
 * Connects to the NATS server. After the first connect the client reconnects on its own, for
 * good; the subscriptions come back with it. The loss and the return are logged once each.
 *
 * @throws AbridgeError BUS_UNAVAILABLE when the server cannot be reached or refuses the connection.
 */
export async function connectNats(options: ConnectNatsOptions): Promise<NatsConnection> {
  const { url, logger } = options;
  let connection: NatsConnection;
  try {
    connection = await connect({
      servers: url.server,
      ...(url.user !== undefined ? { user: url.user } : {}),
      ...(url.pass !== undefined ? { pass: url.pass } : {}),
      name: options.name,
      timeout: options.timeoutMs ?? NATS_CONNECT_TIMEOUT_MS,
      reconnect: true,
      maxReconnectAttempts: -1,
      reconnectTimeWait: RECONNECT_WAIT_MS,
      // One server named: the ones it gossips about may not be reachable from here.
      ignoreClusterUpdates: true,
    });
  } catch (err) {
    const reason = err instanceof Error ? `${err.message}${err.cause instanceof Error ? ` (${err.cause.message})` : ""}` : String(err);
    throw new AbridgeError(ErrorCode.BUS_UNAVAILABLE, `cannot connect to the NATS server at ${url.server}: ${reason}`, { cause: err, retryable: true });
  }
  void watchStatus(connection, url.server, logger);
  return connection;
}

/** Logs the first disconnect of each outage and the reconnect that ends it (not every attempt in between). */
async function watchStatus(connection: NatsConnection, display: string, logger: Logger): Promise<void> {
  let down = false;
  try {
    for await (const status of connection.status()) {
      if (status.type === "disconnect" && !down) {
        down = true;
        logger.warn("lost the NATS server; reconnecting (upstreams stay up)", { server: display });
      } else if (status.type === "reconnect" && down) {
        down = false;
        logger.warn("reconnected to the NATS server", { server: display });
      }
    }
  } catch {
    // The status iterator ends with the connection.
  }
}
