/**
 * abridge as a library: the core (`Bridge`), its parts, and the front ends that embedders start
 * themselves. Explicit named exports only; nothing here imports the CLI.
 */
export { AbridgeError, ErrorCode, isAbridgeError } from "./model/errors.js";
export type { AbridgeErrorOptions } from "./model/errors.js";
export { createLogger, SecretSet, silentLogger } from "./log/logger.js";
export type { Logger, LogLevel, LoggerOptions } from "./log/logger.js";

export { loadConfig, parseConfigText, findConfigPath } from "./config/loadConfig.js";
export { configFileSchema, MODES } from "./config/schema.js";
export type { Config, ConfigFile, Mode, ServerConfig, SummaryConfig } from "./config/schema.js";

export { UpstreamPool } from "./upstream/upstreamPool.js";
export type { UpstreamPoolOptions } from "./upstream/upstreamPool.js";
export { assignNames, parseToolUri, toolUri } from "./model/names.js";
export { normalizeTool } from "./upstream/normalizeTool.js";
export type { CallToolResult, ExposedTool, RawTool, ServerStatus } from "./model/types.js";

export { JsonlStore } from "./cache/jsonlStore.js";
export { clearCache, compactCache, verifyCache } from "./cache/cacheMaintenance.js";
export { resolveCacheFile, resolveStateDir } from "./cache/cachePaths.js";
export { cacheEntrySchema, cacheKey } from "./cache/cacheEntry.js";
export type { CacheEntry } from "./cache/cacheEntry.js";

export { ExtractiveSummarizer } from "./summarize/extractiveSummarizer.js";
export { OpenAiSummarizer } from "./summarize/openAiSummarizer.js";
export { createSummarizer } from "./summarize/createSummarizer.js";
export { guardCachedEntry, guardSummary } from "./summarize/guard.js";
export { SummarizeQueue } from "./summarize/summarizeQueue.js";
export type { Summarizer, SummarizeInput, ToolSummary } from "./summarize/types.js";

export { canonicalJson, createToolHasher } from "./catalog/toolHash.js";
export type { ToolHasher } from "./catalog/toolHash.js";
export { ToolCatalog } from "./catalog/toolCatalog.js";
export { renderTools, tokenReport, toOpenAiFunctions } from "./catalog/renderTools.js";
export { SearchIndex } from "./catalog/searchIndex.js";
export { ArgumentValidator } from "./catalog/argumentValidator.js";
export type { CatalogTool, ListedTool } from "./catalog/types.js";
export { countTokens } from "./tokens/countTokens.js";

export { ToolPolicy } from "./policy/toolPolicy.js";
export { AuditLog } from "./policy/auditLog.js";
export { limitOutput, markUntrusted } from "./policy/outputLimit.js";
export { bwrapArgs, sandboxCommand } from "./upstream/sandbox.js";
export { Bridge } from "./core/bridge.js";
export type { BridgeOptions, BridgeCallOptions, BridgeStats } from "./core/bridge.js";
export type { ResourceRequestOptions, ResourceSubscription } from "./core/bridge.js";
export { ConfigWatcher } from "./core/configWatcher.js";

export { createMcpFrontend } from "./serve/mcpFrontend.js";
export type { McpFrontend, McpFrontendOptions } from "./serve/mcpFrontend.js";
export { serveStdio } from "./serve/serveStdio.js";
export { startHttpServer } from "./serve/httpServer.js";
export type { HttpFrontend, HttpServerOptions } from "./serve/httpServer.js";
export { VERSION } from "./model/version.js";

export { DaemonClient, isMcpPath } from "./client/daemonClient.js";
export type { DaemonClientOptions, DaemonCallOptions, DaemonRequestOptions, HostTool } from "./client/daemonClient.js";
export { ensureDaemon, pingDaemon } from "./client/ensureDaemon.js";
export type { EnsureDaemonOptions, DaemonHandle } from "./client/ensureDaemon.js";
export type { DaemonDiscovery, DaemonStats, DaemonTool, DaemonToolSchema } from "./wire/protocol.js";
export type { LockInfo } from "./wire/lockfile.js";
