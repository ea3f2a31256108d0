/**
 * The warnings of the Redis summary cache: an outage, a refusal of the credentials, entries over
 * the size bound and entries memory had no room for. Each repeats as long as its cause lasts (a
 * reconnection every few seconds, a hostile writer filling the hash), so each is rate-limited or
 * logged once; kept apart so `redisStore.ts` holds the store's logic, not its log texts.
 */
import type { Logger } from "../log/logger.js";
import { RateLimitedLog } from "../log/rateLimitedLog.js";
import { ErrorCode, messageOf } from "../model/errors.js";
import { MAX_ENTRY_BYTES } from "./entryLimits.js";
import { SKIP_LOG_MS } from "./redisStoreOptions.js";

/** The rate-limited warnings of one store. */
export class RedisStoreLogs {
  /** Redis cannot be reached: at most once a minute. */
  readonly outage: RateLimitedLog;
  /** An entry over {@link MAX_ENTRY_BYTES} was skipped. */
  readonly oversized: RateLimitedLog;
  /** An entry was left out of memory, which held its bound. */
  readonly notKept: RateLimitedLog;
  private readonly logger: Logger;
  private authLogged = false;

  constructor(logger: Logger) {
    this.logger = logger;
    this.outage = new RateLimitedLog(logger, "summary cache on Redis is unreachable; serving from memory and the original descriptions, reconnecting", 60_000);
    this.oversized = new RateLimitedLog(
      logger,
      `skipped a summary cache entry over ${MAX_ENTRY_BYTES} bytes; \`abridge cache compact\` removes it`,
      SKIP_LOG_MS,
    );
    this.notKept = new RateLimitedLog(
      logger,
      "the summary cache on Redis holds more entries than this bridge keeps in memory; entries of tools it has not listed are left in Redis",
      SKIP_LOG_MS,
    );
  }

  /**
   * Logs a failure of Redis: refused credentials once for good, an outage once per outage
   * (`down` says this one is already logged).
   */
  failure(err: unknown, down: boolean): void {
    const message = messageOf(err);
    if (/WRONGPASS|NOAUTH|invalid password|invalid username/i.test(message)) {
      if (!this.authLogged) {
        this.authLogged = true;
        this.logger.error("Redis refused the credentials of cache_url; check its user and password", { code: ErrorCode.CONFIG_INVALID, error: message });
      }
    } else if (!down) {
      // Once per outage (the reconnection attempts that follow repeat it); an outage that comes
      // back within a minute of the last one is counted into the next line instead.
      this.outage.warn({ code: ErrorCode.CACHE_UNAVAILABLE, error: message });
    }
  }
}
