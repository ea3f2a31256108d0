import type { Logger } from "./logger.js";

/**
 * A warning that is logged at most once per window; occurrences in between are counted and the
 * next line that gets through says how many were left out. Refusals come from peers that do not
 * hold the token, so without a bound any local process could fill the log (and disk) of the
 * daemon or of `serve --http`.
 */
export class RateLimitedLog {
  private lastMs = Number.NEGATIVE_INFINITY;
  private suppressed = 0;

  constructor(
    private readonly logger: Logger,
    private readonly message: string,
    private readonly windowMs = 10_000,
    private readonly now: () => number = Date.now,
  ) {}

  /** Logs `fields` at warn unless a line went out less than `windowMs` ago. */
  warn(fields: Record<string, unknown>): void {
    const at = this.now();
    if (at - this.lastMs < this.windowMs) {
      this.suppressed += 1;
      return;
    }
    this.lastMs = at;
    const left = this.suppressed;
    this.suppressed = 0;
    this.logger.warn(this.message, left > 0 ? { ...fields, suppressedSinceLast: left } : fields);
  }
}
