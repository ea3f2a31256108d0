/**
 * abridge as a library: the core's one door (`Bridge`), the config it is opened with, the
 * summarizers it can be given, the cache commands, the front ends an embedder starts itself and the
 * daemon's client. Explicit named exports only, each a public API (a test lists them); the parts
 * behind the Bridge (pool, store, queue, catalog, guard) are not exported. Nothing here imports the CLI.
 */
export { AbridgeError, ErrorCode, isAbridgeError } from "./model/errors.js";
export type { AbridgeErrorOptions } from "./model/errors.js";
export { createLogger, SecretSet, silentLogger } from "./log/logger.js";
export type { Logger, LogLevel, LoggerOptions } from "./log/logger.js";
export { VERSION } from "./model/version.js";
export { parseToolUri, toolUri } from "./model/names.js";
export type { CallToolResult, ClientRelay, ListedTool, RawTool, ServerStatus, UpstreamNotification } from "./model/types.js";

export { loadConfig, parseConfigText, findConfigPath } from "./config/loadConfig.js";
export { configFileSchema, MODES } from "./config/schema.js";
export type { Config, ConfigFile, Mode, ServerConfig, SummaryConfig } from "./config/schema.js";

export { Bridge } from "./core/bridge.js";
export type { BridgeOptions, BridgeCallOptions, BridgeStats, ResourceRequestOptions, ResourceSubscription } from "./core/bridge.js";
export type { RunCodeAnswer, RunCodeOptions } from "./core/bridge.js";
export type { CodeCall, CodeRunError, CodeRunResult, ConsoleLine } from "./code/runtime/codeRuntime.js";
export type { CodeLimits } from "./code/runtime/codeLimits.js";
export { ConfigWatcher } from "./core/configWatcher.js";
export type { ConfigWatcherOptions } from "./core/configWatcher.js";
export { tokenReport } from "./core/toolViews.js";
export type { CacheEntry, CatalogTool, SchemaResult } from "./core/toolViews.js";
export { clearSummaryCache, compactSummaryCache, stateDir, summaryCacheFile, verifySummaryCache } from "./core/cacheAdmin.js";
export type { ClearReport, CompactReport, LocationOptions, VerifyReport } from "./core/cacheAdmin.js";
export { countTokens } from "./tokens/countTokens.js";
export { decodeResult, decodeShapedText, shapeJsonText, shapeResult } from "./result/index.js";
export type { ResultFormat, StructuredMode } from "./result/index.js";

// What `BridgeOptions.summarizer` takes: the two built-in summarizers, or an own `Summarizer`.
export { ExtractiveSummarizer } from "./summarize/extractiveSummarizer.js";
export { OpenAiSummarizer } from "./summarize/openAiSummarizer.js";
export type { Summarizer, SummarizeInput, ToolSummary } from "./summarize/types.js";

export { createMcpFrontend } from "./serve/mcpFrontend.js";
export type { McpFrontend, McpFrontendOptions } from "./serve/mcpFrontend.js";
export { serveStdio } from "./serve/serveStdio.js";
export { startHttpServer } from "./serve/httpServer.js";
export type { HttpFrontend, HttpServerOptions } from "./serve/httpServer.js";

export { DaemonClient, isMcpPath } from "./daemon/client/daemonClient.js";
export type { DaemonClientOptions, DaemonCallOptions, DaemonRequestOptions, DaemonRunOptions, HostTool } from "./daemon/client/daemonClient.js";
export { ensureDaemon, pingDaemon } from "./daemon/client/ensureDaemon.js";
export type { EnsureDaemonOptions, DaemonHandle } from "./daemon/client/ensureDaemon.js";
export type { DaemonDiscovery, DaemonStats, DaemonTool, DaemonToolSchema } from "./daemon/wire/protocol.js";
export type { LockInfo } from "./daemon/wire/lockfile.js";
export { BusCallError, BusClient } from "./bus/client/busClient.js";
export type { BusCallOptions, BusClientOptions, BusDiscovery, BusListOptions, BusRunOptions } from "./bus/client/busClient.js";
export type { BusErrorCode } from "./bus/wire/busProtocol.js";
