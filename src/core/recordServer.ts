import type { Config } from "../config/schema.js";
import type { Logger } from "../log/logger.js";
import { AbridgeError, ErrorCode } from "../model/errors.js";
import type { JsonObject } from "../model/types.js";
import { VERSION } from "../model/version.js";
import { childMarkerEnv } from "../upstream/mcp/nestedAbridge.js";
import { failedStartError } from "./failedStart.js";
import { UpstreamPool } from "../upstream/upstreamPool.js";

/** Options of {@link recordServer}. */
export interface RecordServerOptions {
  /** Environment of the server's process (and the marker that tells a nested abridge of us). */
  env: Record<string, string | undefined>;
  logger?: Logger;
  signal?: AbortSignal;
}

/** One server's `tools/list` answer as `abridge record` writes it. */
export interface RecordedServer {
  server: string;
  /** The server's `serverInfo` from its `initialize` answer, when it sent one. */
  serverInfo?: { name: string; version: string };
  /** The tools exactly as the server sent them, every page joined (allow/deny not applied). */
  tools: JsonObject[];
}

/**
 * Connects to `server` of `config` alone, reads its whole tool list and closes it again (the
 * child is ended whatever happens): what `recorded = "..."`, `abridge render` and the benchmark
 * corpus are made of.
 *
 * @throws AbridgeError SERVER_NOT_FOUND when the config has no such server, UPSTREAM_UNAVAILABLE
 *   when it is disabled, and the server's own start error (UPSTREAM_START_FAILED, ...) when it
 *   does not start.
 */
export async function recordServer(config: Config, server: string, options: RecordServerOptions): Promise<RecordedServer> {
  const entry = config.servers.find((s) => s.name === server);
  if (entry === undefined) throw new AbridgeError(ErrorCode.SERVER_NOT_FOUND, `no server "${server}" in ${config.source}`, { details: { server } });
  if (!entry.enabled) {
    throw new AbridgeError(ErrorCode.UPSTREAM_UNAVAILABLE, `server ${server} is disabled (enabled = false in ${config.source})`);
  }
  const pool = new UpstreamPool({
    servers: [entry],
    separator: config.separator,
    // The recording is the server's whole answer: allow/deny does not apply to it.
    exposes: () => true,
    ...(options.logger !== undefined ? { logger: options.logger } : {}),
    // One attempt: the recording ends here either way, and a failure is thrown to the caller.
    retryFailedStart: false,
    // Lets an abridge among the servers see that it would serve this config again.
    childEnv: childMarkerEnv(config.source, options.env),
    clientInfo: { name: "abridge", version: VERSION },
  });
  try {
    await pool.start(options.signal);
    const status = pool.status(server);
    if (status?.state !== "ready") throw failedStartError(status ?? { name: server });
    const tools = await pool.recordTools(server, options.signal !== undefined ? { signal: options.signal } : {});
    return { server, ...(status.serverInfo !== undefined ? { serverInfo: status.serverInfo } : {}), tools };
  } finally {
    await pool.close();
  }
}
