import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { importEdges } from "./importGraph.js";

/** Every module `entry` loads at run time (type-only imports left out), within src/. */
function runtimeClosure(entry: string): Set<string> {
  const edges = importEdges().filter((e) => !e.typeOnly);
  const seen = new Set<string>();
  const visit = (module: string): void => {
    if (seen.has(module)) return;
    seen.add(module);
    for (const edge of edges) if (edge.from === module) visit(edge.to);
  };
  visit(entry);
  return seen;
}

/** The library's API: every value and every type `src/index.ts` exports. */
const VALUES = [
  "AbridgeError",
  "Bridge",
  "BusCallError",
  "BusClient",
  "ConfigWatcher",
  "DaemonClient",
  "ErrorCode",
  "ExtractiveSummarizer",
  "MODES",
  "OpenAiSummarizer",
  "SecretSet",
  "VERSION",
  "clearSummaryCache",
  "compactSummaryCache",
  "configFileSchema",
  "countTokens",
  "createLogger",
  "decodeResult",
  "decodeShapedText",
  "shapeJsonText",
  "shapeResult",
  "createMcpFrontend",
  "ensureDaemon",
  "findConfigPath",
  "isAbridgeError",
  "isMcpPath",
  "loadConfig",
  "parseConfigText",
  "parseToolUri",
  "pingDaemon",
  "serveStdio",
  "silentLogger",
  "startHttpServer",
  "stateDir",
  "summaryCacheFile",
  "tokenReport",
  "toolUri",
  "verifySummaryCache",
];
const TYPES = [
  "AbridgeErrorOptions",
  "BridgeCallOptions",
  "BridgeOptions",
  "BridgeStats",
  "BusCallOptions",
  "BusClientOptions",
  "BusDiscovery",
  "BusErrorCode",
  "BusListOptions",
  "BusRunOptions",
  "CacheEntry",
  "CallToolResult",
  "CatalogTool",
  "CodeCall",
  "CodeLimits",
  "CodeRunError",
  "CodeRunResult",
  "ConsoleLine",
  "ClearReport",
  "ClientRelay",
  "CompactReport",
  "Config",
  "ConfigFile",
  "ConfigWatcherOptions",
  "DaemonCallOptions",
  "DaemonClientOptions",
  "DaemonDiscovery",
  "DaemonHandle",
  "DaemonRequestOptions",
  "DaemonRunOptions",
  "DaemonStats",
  "DaemonTool",
  "DaemonToolSchema",
  "EnsureDaemonOptions",
  "HostTool",
  "HttpFrontend",
  "HttpServerOptions",
  "ListedTool",
  "LocationOptions",
  "LockInfo",
  "LogLevel",
  "Logger",
  "LoggerOptions",
  "McpFrontend",
  "McpFrontendOptions",
  "Mode",
  "RawTool",
  "ResourceRequestOptions",
  "ResourceSubscription",
  "ResultFormat",
  "StructuredMode",
  "RunCodeAnswer",
  "RunCodeOptions",
  "SchemaResult",
  "ServerConfig",
  "ServerStatus",
  "SummarizeInput",
  "Summarizer",
  "SummaryConfig",
  "ToolSummary",
  "UpstreamNotification",
  "VerifyReport",
];

describe("library entry (src/index.ts)", () => {
  it("exports exactly the library API, by name", async () => {
    const text = readFileSync("src/index.ts", "utf8");
    expect(text).not.toMatch(/export \*/);
    const lib = (await import("../../src/index.js")) as Record<string, unknown>;
    expect(Object.keys(lib).sort()).toEqual([...VALUES].sort());
    const types = [...text.matchAll(/^export type \{([^}]*)\}/gm)].flatMap((m) =>
      m[1]!
        .split(",")
        .map((n) => n.trim())
        .filter(Boolean),
    );
    expect(types.sort()).toEqual([...TYPES].sort());
  });

  it("never loads the CLI, and the daemon's client never loads the daemon", () => {
    const loaded = [...runtimeClosure("index.ts")];
    expect(loaded.filter((m) => m.startsWith("cli/"))).toEqual([]);
    const client = [
      ...runtimeClosure("daemon/client/daemonClient.ts"),
      ...runtimeClosure("daemon/client/ensureDaemon.ts"),
      ...runtimeClosure("bus/client/busClient.ts"),
    ];
    expect(client.filter((m) => m.startsWith("daemon/server/") || m.startsWith("bus/worker/") || m.startsWith("core/"))).toEqual([]);
    expect(loaded).toContain("daemon/client/daemonClient.ts");
    expect(loaded).toContain("core/bridge.ts");
  });

  it("works through its exports: a Bridge over no servers lists the lazy meta-tools", async () => {
    const lib = await import("../../src/index.js");
    const { mkdtemp, rm } = await import("node:fs/promises");
    const os = await import("node:os");
    const dir = await mkdtemp(path.join(os.tmpdir(), "abridge-lib-"));
    try {
      const config = lib.parseConfigText('mode = "lazy"\n', { file: path.join(dir, "abridge.toml"), env: {} });
      const bridge = await lib.Bridge.open({ config, cacheFile: path.join(dir, "summaries.jsonl"), env: {} });
      try {
        await bridge.start();
        expect(bridge.list("lazy").map((t) => t.name)).toEqual(["search_tools", "get_schema", "call_tool"]);
        expect(lib.tokenReport([], { separator: config.separator }).compact.openAiTokens).toBeGreaterThan(0);
      } finally {
        await bridge.close();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
