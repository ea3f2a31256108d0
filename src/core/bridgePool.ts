import path from "node:path";
import type { Logger } from "../log/logger.js";
import { VERSION } from "../model/version.js";
import { exposesTool } from "../policy/allowDeny.js";
import { childMarkerEnv } from "../upstream/mcp/nestedAbridge.js";
import { UpstreamPool } from "../upstream/upstreamPool.js";
import type { BridgeOptions } from "./bridgeOptions.js";

/**
 * The upstream pool of a bridge, built from the config alone so that it can start before anything
 * else is opened: what it needs of the guard (allow/deny, where spilled outputs go) is the config's.
 */
export function newPool(options: BridgeOptions, stateDir: string, logger: Logger): UpstreamPool {
  const { config } = options;
  return new UpstreamPool({
    servers: config.servers,
    separator: config.separator,
    ...(config.serverOrder !== undefined ? { serverOrder: config.serverOrder } : {}),
    // What a sandboxed server must not read: the summary cache, spilled outputs of every server,
    // the state dir (the daemon's lockfile holds its token; spilled outputs are under it), the
    // audit log and the config file. Folders end in a separator: one not there yet is created as
    // a folder before the spawn.
    sandboxHide: [
      `${path.dirname(options.cacheFile)}${path.sep}`,
      `${stateDir}${path.sep}`,
      ...(config.audit_log !== undefined ? [config.audit_log] : []),
      ...(path.isAbsolute(config.source) ? [config.source] : []),
    ],
    logger,
    // The policy's allow/deny (the guard's `exposes`): a tool it hides is not listed, counted or
    // forwarded by the pool. Per server entry, so a reloaded config's filters apply as it is.
    exposes: (server, tool) => exposesTool(server, tool),
    // Lets an abridge among the servers see that it would serve this config again.
    childEnv: childMarkerEnv(config.source, options.env),
    clientInfo: { name: "abridge", version: VERSION },
    ...(options.backoff ? { backoff: options.backoff } : {}),
    ...(options.retryFailedStart !== undefined ? { retryFailedStart: options.retryFailedStart } : {}),
  });
}
