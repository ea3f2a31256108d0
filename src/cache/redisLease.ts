/**
 * The lease of a summary claim on Redis: renewed and released by scripts that compare the token
 * first, so a host can never extend or drop another's lease. Kept apart from `redisStore.ts`,
 * which takes the claim, so the store's module holds its connection, load and write logic.
 */
import type { Redis } from "ioredis";
import { RELEASE_SCRIPT, RENEW_SCRIPT } from "./redisScripts.js";
import type { ClaimLease } from "./summaryStore.js";

/**
 * The lease of the claim `claimKey` held with `token`. `track` runs the release as the store
 * tracks a write: close() must not send QUIT ahead of it, or the key stays claimed for a whole
 * lease after this host is gone.
 */
export function redisLease(client: Redis, claimKey: string, token: string, leaseMs: number, track: (work: Promise<unknown>) => Promise<void>): ClaimLease {
  return {
    renew: async () => {
      try {
        return (await client.eval(RENEW_SCRIPT, 1, claimKey, token, leaseMs)) === 1;
      } catch {
        // Unreachable: whether the lease holds cannot be told; the job goes on either way.
        return true;
      }
    },
    release: async () => {
      if (client.status !== "ready") return;
      await track(client.eval(RELEASE_SCRIPT, 1, claimKey, token).catch(() => undefined));
    },
  };
}
