import { readdirSync, readFileSync } from "node:fs";
import type { Socket } from "node:net";
import type { Logger } from "../log/logger.js";
import { RateLimitedLog } from "../log/rateLimitedLog.js";

/** Default of `http_max_connections`: connections that passed the checks, at most. */
export const DEFAULT_MAX_CONNECTIONS = 512;
/**
 * Connections that have not passed the checks yet (no request with the token, or from a loopback
 * Host, so far), at most: 64, as the daemon keeps. Past it the oldest of them is closed.
 */
export const MAX_UNAUTHENTICATED_CONNECTIONS = 64;
/** How long a connection may stay without a request that passes the checks (10 s, as the daemon). */
export const PRE_AUTH_DEADLINE_MS = 10_000;
/** At most one log line per this window for each kind of refused connection. */
const LOG_WINDOW_MS = 10_000;

/**
 * File descriptors in use against the process's limit, on Linux (`/proc/self/fd` and
 * `/proc/self/limits`). Node raises the soft `RLIMIT_NOFILE` to the hard one when it starts, so
 * the limit read here is the most abridge can have; what it cannot raise further it keeps a
 * reserve under, for the upstream processes it spawns and the files it writes.
 */
export class FdBudget {
  /** Descriptors kept free of connections. */
  readonly reserve: number;
  private measured = 0;
  private measuredAt = Number.NEGATIVE_INFINITY;
  /** Connections opened less those closed since the last count. */
  private sinceMeasured = 0;

  constructor(
    /** The soft limit of open files. */
    readonly limit: number,
    private readonly count: () => number = countOpenFds,
    reserve?: number,
  ) {
    this.reserve = reserve ?? Math.min(64, Math.floor(limit / 4));
  }

  /** This process's budget, or undefined where its descriptors cannot be counted (no /proc). */
  static forThisProcess(): FdBudget | undefined {
    const limit = openFileLimit();
    if (limit === undefined) return undefined;
    try {
      countOpenFds();
    } catch {
      return undefined;
    }
    return new FdBudget(limit);
  }

  /** Descriptors in use (counted at most every few ms; connections opened since are added). */
  inUse(): number {
    const now = performance.now();
    // Far from the limit a count a second is plenty; near it, one per 20 ms (a count of a thousand
    // descriptors takes about a millisecond).
    const estimate = this.measured + this.sinceMeasured;
    if (now - this.measuredAt >= (estimate * 2 >= this.limit ? 20 : 1000)) {
      this.measured = this.count();
      this.measuredAt = now;
      this.sinceMeasured = 0;
    }
    return this.measured + this.sinceMeasured;
  }

  /** True while a connection more leaves the reserve free. */
  hasRoom(): boolean {
    return this.inUse() < this.limit - this.reserve;
  }

  opened(): void {
    this.sinceMeasured += 1;
  }

  closed(): void {
    this.sinceMeasured -= 1;
  }
}

/** The soft limit of open files, from /proc/self/limits; undefined when unknown or unlimited. */
export function openFileLimit(): number | undefined {
  try {
    const line = readFileSync("/proc/self/limits", "utf8")
      .split("\n")
      .find((l) => l.startsWith("Max open files"));
    const soft = Number(/^Max open files\s+(\d+)/.exec(line ?? "")?.[1]);
    return Number.isSafeInteger(soft) && soft > 0 ? soft : undefined;
  } catch {
    return undefined;
  }
}

function countOpenFds(): number {
  return readdirSync("/proc/self/fd").length;
}

/** Options of {@link HttpConnections}. */
export interface HttpConnectionsOptions {
  logger: Logger;
  /** Connections that passed the checks, at most (default {@link DEFAULT_MAX_CONNECTIONS}). */
  maxConnections?: number;
  /** Connections that have not, at most (default {@link MAX_UNAUTHENTICATED_CONNECTIONS}). */
  maxUnauthenticated?: number;
  /** How long a connection may stay without passing them (default {@link PRE_AUTH_DEADLINE_MS}). */
  preAuthMs?: number;
  /** Descriptors against the limit; undefined: not watched. */
  fds?: FdBudget | undefined;
}

/**
 * The connections of `serve --http`, bounded as the daemon bounds its own. Every local user can
 * reach the port, token or not: 1,100 idle sockets used to put abridge at its 1,024-descriptor
 * limit, and the token holder got ECONNRESET until they left. Now:
 *
 * - A connection counts as unauthenticated until one of its requests passes the checks (loopback
 *   Host and Origin, and the bearer token when one is set). At most `maxUnauthenticated` are kept:
 *   a new connection past that closes the oldest of them, so a flood cannot lock out the token
 *   holder, whose connection shows the token in its first request and so never stays among them
 *   for long. One that has not passed by `preAuthMs` after it opened is closed, however much it
 *   trickles.
 * - At most `maxConnections` pass the checks; a request that would make one more is answered 503
 *   with `Connection: close`.
 * - Before a connection is kept, the descriptors in use are counted against the process's limit
 *   ({@link FdBudget}): past the reserve the oldest unauthenticated connection makes room, or, when
 *   there is none, the new connection is closed at once, before the process reaches EMFILE (where
 *   it could not spawn an upstream or open a file, and the kernel would reset every connection).
 */
export class HttpConnections {
  private readonly unauthenticated = new Map<Socket, NodeJS.Timeout>();
  private readonly authenticated = new Set<Socket>();
  private readonly maxConnections: number;
  private readonly maxUnauthenticated: number;
  private readonly preAuthMs: number;
  private readonly fds: FdBudget | undefined;
  private readonly evictions: RateLimitedLog;
  private readonly fdEvictions: RateLimitedLog;
  private readonly refusals: RateLimitedLog;
  private readonly overCap: RateLimitedLog;
  private readonly lateAuth: RateLimitedLog;
  private readonly counters = { evicted: 0, refused: 0, overCap: 0, timedOut: 0 };

  constructor(options: HttpConnectionsOptions) {
    this.maxConnections = options.maxConnections ?? DEFAULT_MAX_CONNECTIONS;
    this.maxUnauthenticated = options.maxUnauthenticated ?? MAX_UNAUTHENTICATED_CONNECTIONS;
    this.preAuthMs = options.preAuthMs ?? PRE_AUTH_DEADLINE_MS;
    this.fds = options.fds;
    this.evictions = new RateLimitedLog(options.logger, "closed the oldest HTTP connection that has not shown the token, to make room", LOG_WINDOW_MS);
    this.fdEvictions = new RateLimitedLog(
      options.logger,
      "closed the oldest HTTP connection that has not shown the token: file descriptors are near the limit",
      LOG_WINDOW_MS,
    );
    this.refusals = new RateLimitedLog(options.logger, "refused an HTTP connection: file descriptors are near the limit", LOG_WINDOW_MS);
    this.overCap = new RateLimitedLog(options.logger, "refused an HTTP request: too many connections", LOG_WINDOW_MS);
    this.lateAuth = new RateLimitedLog(options.logger, "closed an HTTP connection that did not show the token in time", LOG_WINDOW_MS);
  }

  /** Open connections: those that passed the checks, and those that have not. */
  get open(): { authenticated: number; unauthenticated: number } {
    return { authenticated: this.authenticated.size, unauthenticated: this.unauthenticated.size };
  }

  /** Connections closed or refused by each rule so far. */
  get closedByRule(): { evicted: number; refused: number; overCap: number; timedOut: number } {
    return { ...this.counters };
  }

  /** Takes a new connection in, or closes it (see the class). */
  accept(socket: Socket): void {
    const full = this.unauthenticated.size >= this.maxUnauthenticated;
    const noRoom = this.fds !== undefined && !this.fds.hasRoom();
    if (full || noRoom) {
      const oldest = this.unauthenticated.keys().next();
      if (oldest.done === true) {
        this.counters.refused += 1;
        this.refusals.warn({ inUse: this.fds?.inUse(), limit: this.fds?.limit, reserve: this.fds?.reserve });
        socket.destroy();
        return;
      }
      this.counters.evicted += 1;
      if (full) this.evictions.warn({ maxUnauthenticated: this.maxUnauthenticated });
      else this.fdEvictions.warn({ inUse: this.fds?.inUse(), limit: this.fds?.limit, reserve: this.fds?.reserve });
      this.drop(oldest.value);
      oldest.value.destroy();
    }
    const deadline = setTimeout(() => {
      if (!this.unauthenticated.has(socket)) return;
      this.counters.timedOut += 1;
      this.lateAuth.warn({ afterMs: this.preAuthMs });
      this.drop(socket);
      socket.destroy();
    }, this.preAuthMs);
    deadline.unref();
    this.unauthenticated.set(socket, deadline);
    this.fds?.opened();
    socket.once("close", () => {
      this.drop(socket);
      this.fds?.closed();
    });
  }

  /**
   * A request on `socket` passed the checks. True when the connection may be served: it passed
   * before, or there is room for one more; false when it must be answered 503 and closed.
   */
  authenticate(socket: Socket): boolean {
    if (this.authenticated.has(socket)) return true;
    const deadline = this.unauthenticated.get(socket);
    // Not one of ours: accepted before this registry, or already dropped; served as it is.
    if (deadline === undefined) return true;
    if (this.authenticated.size >= this.maxConnections) {
      this.counters.overCap += 1;
      this.overCap.warn({ maxConnections: this.maxConnections });
      return false;
    }
    clearTimeout(deadline);
    this.unauthenticated.delete(socket);
    this.authenticated.add(socket);
    return true;
  }

  /** Forgets every connection (the server is closing them). */
  clear(): void {
    for (const deadline of this.unauthenticated.values()) clearTimeout(deadline);
    this.unauthenticated.clear();
    this.authenticated.clear();
  }

  /** Forgets `socket`; true when it was still counted. */
  private drop(socket: Socket): boolean {
    const deadline = this.unauthenticated.get(socket);
    if (deadline !== undefined) {
      clearTimeout(deadline);
      this.unauthenticated.delete(socket);
      return true;
    }
    return this.authenticated.delete(socket);
  }
}
