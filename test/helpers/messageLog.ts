/**
 * What a test has read from a peer, and waits on it: {@link until} resolves once a condition over
 * the log holds (checked again on every {@link wake}, which the owner calls after it adds to
 * `messages`), or fails after a generous timeout with the
 * tail of the log and whatever else `context` adds (e.g. the peer's stderr).
 */
export class MessageLog<M> {
  readonly messages: M[] = [];
  private readonly waiters = new Set<() => void>();

  constructor(private readonly context: () => string = () => "") {}

  /** Checks every pending condition again (after a message, or anything else it may read). */
  wake(): void {
    for (const wake of this.waiters) wake();
  }

  until<T>(test: () => T | undefined, what: string, timeoutMs = 30_000): Promise<T> {
    return new Promise((resolve, reject) => {
      const check = (): void => {
        const value = test();
        if (value === undefined) return;
        clearTimeout(timer);
        this.waiters.delete(check);
        resolve(value);
      };
      const timer = setTimeout(() => {
        this.waiters.delete(check);
        reject(new Error(`timed out waiting for ${what}; got ${JSON.stringify(this.messages).slice(-1500)}${this.context()}`));
      }, timeoutMs);
      this.waiters.add(check);
      check();
    });
  }
}
