/** Where a Redis summary cache lives, taken apart from `cache_url`. */
export interface RedisTarget {
  host: string;
  port: number;
  /** Logical database (the URL's path, default 0). */
  db: number;
  username?: string;
  password?: string;
  /** `rediss://`: TLS. */
  tls: boolean;
  /** The URL without its password, safe for logs and status output. */
  display: string;
}

/** The answer of {@link parseRedisUrl}. */
export type RedisUrlResult = { ok: true; target: RedisTarget } | { ok: false; message: string };

/** The shape `cache_url` must have, for error messages. */
export const REDIS_URL_SHAPE = "redis://[[user]:password@]host[:port][/db] (or rediss:// for TLS)";

const DEFAULT_PORT = 6379;
/** Redis's default `databases` setting allows 0 to 15; servers may allow more. */
const MAX_DB = 1_000_000;

/**
 * Checks and takes apart a `cache_url`. Messages never repeat the URL: it may carry a password.
 */
export function parseRedisUrl(text: string): RedisUrlResult {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return { ok: false, message: `expected ${REDIS_URL_SHAPE}, got something that is not a URL` };
  }
  if (url.protocol !== "redis:" && url.protocol !== "rediss:") {
    return { ok: false, message: `expected ${REDIS_URL_SHAPE}, got a ${url.protocol.replace(/:$/, "")}: URL` };
  }
  if (url.hostname === "") return { ok: false, message: `expected ${REDIS_URL_SHAPE}, got no host` };
  const port = url.port === "" ? DEFAULT_PORT : Number(url.port);
  const path = url.pathname.replace(/^\//, "");
  if (path !== "" && !/^\d+$/.test(path)) {
    return { ok: false, message: `expected a database number after the host (/0, /1...), got "/${path.slice(0, 20)}"` };
  }
  const db = path === "" ? 0 : Number(path);
  if (db > MAX_DB) return { ok: false, message: `expected a database number up to ${MAX_DB}, got ${db}` };
  if (url.search !== "" || url.hash !== "") return { ok: false, message: `expected ${REDIS_URL_SHAPE}, got a query or fragment` };
  const username = decode(url.username);
  const password = decode(url.password);
  const shown = new URL(url.href);
  if (shown.password !== "") shown.password = "***";
  return {
    ok: true,
    target: {
      // `new URL` keeps the brackets of an IPv6 literal; sockets want it bare.
      host: url.hostname.replace(/^\[(.*)\]$/, "$1"),
      port,
      db,
      ...(username !== "" ? { username } : {}),
      ...(password !== "" ? { password } : {}),
      tls: url.protocol === "rediss:",
      display: shown.href,
    },
  };
}

function decode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** `host:port/db` of a target with no credentials, for names derived from it (the spool file). */
export function targetIdentity(target: RedisTarget): string {
  return `${target.host}:${target.port}/${target.db}`;
}
