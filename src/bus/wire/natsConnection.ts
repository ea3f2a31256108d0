import { readFileSync } from "node:fs";
import { AuthorizationError, connect, credsAuthenticator, nkeyAuthenticator, type ConnectionOptions, type NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "../../log/logger.js";
import { AbridgeError, ErrorCode } from "../../model/errors.js";

/**
 * Opening a NATS connection the same way for the bus worker and the host-side client: the URL
 * and the credentials checked first (a typo is a clear error, not a reconnect loop), a bounded
 * first connect, and reconnects after that for good, with one line logged per outage.
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
  /** A token: the URL's user name when it has no password (`nats://TOKEN@HOST`), as NATS clients read it. */
  token?: string;
  /** `tls://`: the connection must be TLS. */
  tls: boolean;
  /** The credentials again, for the logger's redaction. */
  secrets: string[];
}

/**
 * Checks a `nats://HOST:PORT` URL (port default 4222; `tls://` too, which requires TLS).
 * `nats://USER:PASSWORD@HOST` logs in with a user and password, `nats://TOKEN@HOST` with a token.
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
  const token = user !== "" && url.password === "" ? user : undefined;
  return {
    server: `${url.protocol}//${host}:${port}`,
    ...(token !== undefined ? { token } : user !== "" ? { user } : {}),
    ...(pass !== "" ? { pass } : {}),
    tls: url.protocol === "tls:",
    secrets: [user, pass].filter((s) => s !== ""),
  };
}

/**
 * How a connection proves who it is and protects its traffic, beside the URL's own credentials.
 * At most one way to log in: the URL's user and password or token, `credsFile` or `nkeyFile`.
 */
export interface NatsSecurity {
  /** A `.creds` file (a user JWT and its nkey seed, as `nsc` writes it): operator/JWT mode. */
  credsFile?: string;
  /** A file holding a user's nkey seed (`SU...`), for a server that lists the user's public nkey. */
  nkeyFile?: string;
  /** TLS: the CA that signs the server's certificate; a client certificate and key for mutual TLS. Any of them requires TLS. */
  tls?: { caFile?: string; certFile?: string; keyFile?: string };
  /**
   * Where the answers to this connection's requests arrive (default `_INBOX`): with a prefix of
   * its own (`_INBOX.alpha`), a permission can let only this requester read its answers.
   */
  inboxPrefix?: string;
}

/** Inbox prefixes: subject tokens without wildcards. */
const INBOX_PREFIX = /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/;

/**
 * The connect options of `url` and `security`: the credentials read from their files now, so a
 * missing or unreadable file is a clear error before any connection is tried.
 *
 * @throws AbridgeError INPUT_INVALID for two ways to log in at once, an unreadable file or a bad inbox prefix.
 */
export function natsConnectOptions(url: NatsUrl, security: NatsSecurity = {}): ConnectionOptions {
  const ways = [
    url.user !== undefined ? "a user and password in the URL" : undefined,
    url.token !== undefined ? "a token in the URL" : undefined,
    security.credsFile !== undefined ? "a creds file" : undefined,
    security.nkeyFile !== undefined ? "an nkey seed file" : undefined,
  ].filter((w) => w !== undefined);
  if (ways.length > 1) throw new AbridgeError(ErrorCode.INPUT_INVALID, `NATS credentials: give one way to log in, got ${ways.join(" and ")}`);
  const options: ConnectionOptions = {};
  if (url.user !== undefined) options.user = url.user;
  if (url.pass !== undefined) options.pass = url.pass;
  if (url.token !== undefined) options.token = url.token;
  if (security.credsFile !== undefined) {
    const creds = readCredentialFile(security.credsFile, "creds file");
    if (!/-----BEGIN NATS USER JWT-----/.test(creds.text) || !/-----BEGIN USER NKEY SEED-----/.test(creds.text)) {
      throw new AbridgeError(
        ErrorCode.INPUT_INVALID,
        `NATS creds file ${security.credsFile}: expected a user JWT and an nkey seed between BEGIN/END lines (as nsc writes them)`,
      );
    }
    options.authenticator = credsAuthenticator(creds.bytes);
  }
  if (security.nkeyFile !== undefined) {
    const seed = readCredentialFile(security.nkeyFile, "nkey seed file");
    const text = seed.text.trim();
    if (!/^SU[A-Z2-7]+$/.test(text))
      throw new AbridgeError(ErrorCode.INPUT_INVALID, `NATS nkey seed file ${security.nkeyFile}: expected a user seed (one line starting with SU)`);
    options.authenticator = nkeyAuthenticator(new TextEncoder().encode(text));
  }
  const tls = security.tls ?? {};
  for (const [what, file] of [
    ["TLS CA file", tls.caFile],
    ["TLS certificate file", tls.certFile],
    ["TLS key file", tls.keyFile],
  ] as const) {
    if (file !== undefined) readCredentialFile(file, what);
  }
  if ((tls.certFile === undefined) !== (tls.keyFile === undefined)) {
    throw new AbridgeError(ErrorCode.INPUT_INVALID, "NATS TLS: a client certificate needs its key, and a key its certificate");
  }
  if (url.tls || tls.caFile !== undefined || tls.certFile !== undefined) {
    options.tls = {
      ...(tls.caFile !== undefined ? { caFile: tls.caFile } : {}),
      ...(tls.certFile !== undefined ? { certFile: tls.certFile } : {}),
      ...(tls.keyFile !== undefined ? { keyFile: tls.keyFile } : {}),
    };
  }
  if (security.inboxPrefix !== undefined) {
    if (!INBOX_PREFIX.test(security.inboxPrefix)) {
      throw new AbridgeError(
        ErrorCode.INPUT_INVALID,
        `NATS inbox prefix: expected subject tokens of letters, digits, _ and - joined by dots, got ${JSON.stringify(security.inboxPrefix)}`,
      );
    }
    options.inboxPrefix = security.inboxPrefix;
  }
  return options;
}

function readCredentialFile(file: string, what: string): { text: string; bytes: Uint8Array } {
  try {
    const bytes = readFileSync(file);
    return { text: bytes.toString("utf8"), bytes: new Uint8Array(bytes) };
  } catch (err) {
    const reason = err instanceof Error && "code" in err ? String(err.code) : String(err);
    throw new AbridgeError(ErrorCode.INPUT_INVALID, `cannot read the NATS ${what} ${file}: ${reason}`, { cause: err });
  }
}

function redactUrl(url: URL): string {
  const copy = new URL(url.href);
  if (copy.password !== "") copy.password = "***";
  return copy.href;
}

/** Options of {@link connectNats}. */
export interface ConnectNatsOptions {
  url: NatsUrl;
  security?: NatsSecurity;
  /** The connection's name as the NATS server shows it (`abridge-bus:<agent>`). */
  name: string;
  logger: Logger;
  timeoutMs?: number;
}

/**
 * Connects to the NATS server. After the first connect the client reconnects on its own, for
 * good; the subscriptions come back with it. The loss and the return are logged once each.
 *
 * @throws AbridgeError BUS_UNAVAILABLE when the server cannot be reached or refuses the connection
 * (refused credentials: not retryable); INPUT_INVALID for credentials that cannot be used (see {@link natsConnectOptions}).
 */
export async function connectNats(options: ConnectNatsOptions): Promise<NatsConnection> {
  const { url, logger } = options;
  const security = natsConnectOptions(url, options.security);
  let connection: NatsConnection;
  try {
    connection = await connect({
      servers: url.server,
      ...security,
      name: options.name,
      timeout: options.timeoutMs ?? NATS_CONNECT_TIMEOUT_MS,
      reconnect: true,
      maxReconnectAttempts: -1,
      reconnectTimeWait: RECONNECT_WAIT_MS,
      // One server named: the ones it gossips about may not be reachable from here.
      ignoreClusterUpdates: true,
    });
  } catch (err) {
    if (err instanceof AuthorizationError) {
      const how =
        security.authenticator !== undefined
          ? "the nkey or creds given"
          : security.token !== undefined
            ? "the token given"
            : security.user !== undefined
              ? "the user and password given"
              : "no credentials";
      throw new AbridgeError(
        ErrorCode.BUS_UNAVAILABLE,
        `the NATS server at ${url.server} refused the connection with ${how} (${err.message}): check the credentials`,
        { cause: err, retryable: false },
      );
    }
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
