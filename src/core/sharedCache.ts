import { bridgeStateDir, redisSpoolFile } from "../cache/cachePaths.js";
import { parseRedisUrl, targetIdentity } from "../config/redisUrl.js";
import type { BridgeOptions } from "./bridgeOptions.js";
import type { SummaryPipelineOptions } from "./summaryPipeline.js";

/**
 * The pipeline options of a config's shared cache (`cache_url`, `cache_lease_ms`), with the spool
 * under the state dir the rest of the bridge uses. Nothing when the cache is the local file.
 */
export function sharedCacheOptions(
  options: Pick<BridgeOptions, "config" | "env" | "stateDir">,
): Pick<SummaryPipelineOptions, "cacheUrl" | "leaseMs" | "spoolFile"> {
  const { config } = options;
  if (config.cache_url === undefined) return {};
  const parsed = parseRedisUrl(config.cache_url);
  // The state dir the rest of the bridge uses (CallGuard's spilled outputs).
  const stateDir = options.stateDir ?? bridgeStateDir(config, options.env);
  return {
    cacheUrl: config.cache_url,
    leaseMs: config.cache_lease_ms,
    // A malformed URL fails in the store with a config error naming the field.
    ...(parsed.ok ? { spoolFile: redisSpoolFile(stateDir, targetIdentity(parsed.target)) } : {}),
  };
}
