import { describe, expect, it } from "vitest";
import { layerViolations, type ImportEdge } from "./importGraph.js";

describe("layers of src/", () => {
  it("puts every folder on a layer; every import points down, and front ends enter through the core", () => {
    expect(layerViolations()).toEqual([]);
  });

  it("reports an upward, a sideways and an under-the-core import, types included", () => {
    const edges: ImportEdge[] = [
      { from: "cache/jsonlStore.ts", to: "core/bridge.ts", typeOnly: false },
      { from: "serve/mcpFrontend.ts", to: "daemon/server/daemon.ts", typeOnly: false },
      { from: "cli/runCli.ts", to: "catalog/types.ts", typeOnly: true },
      // Allowed: down a layer, a front end into the core, the CLI onto a front end under it.
      { from: "core/bridge.ts", to: "policy/callGuard.ts", typeOnly: false },
      { from: "daemon/server/daemon.ts", to: "core/bridge.ts", typeOnly: false },
      { from: "daemon/client/daemonClient.ts", to: "daemon/wire/protocol.ts", typeOnly: false },
      { from: "cli/commands/serveCommand.ts", to: "serve/serveStdio.ts", typeOnly: false },
    ];
    expect(layerViolations(edges)).toEqual([
      "cache/jsonlStore.ts imports core/bridge.ts: upward, cache is under core",
      "serve/mcpFrontend.ts imports daemon/server/daemon.ts: sideways, serve and daemon/server are on one layer",
      "cli/runCli.ts imports the types of catalog/types.ts: the front end cli reaches under the core",
    ]);
  });
});
