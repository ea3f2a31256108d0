import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

/** Folders below core that a front end must reach through core, never directly. */
const BELOW_CORE = new Set(["cache", "catalog", "summarize", "upstream", "policy", "tokens"]);
const FRONT_ENDS = ["cli", "serve", "daemon", "client"];

/**
 * Imports below core that front ends still make, each tied to a part of the Bridge they read
 * directly (`bridge.catalog`, `bridge.queue`, the pool) or to a type that has not moved yet. The
 * list may only shrink: a new import below core fails the test.
 */
const PENDING = new Set([
  "cli/commands/summarizeCommands.ts -> cache/cacheEntry.js",
  "cli/commands/summarizeCommands.ts -> catalog/renderTools.js",
  "serve/mcpFrontend.ts -> upstream/upstreamConnection.js",
  "serve/aggregateResources.ts -> upstream/upstreamPool.js",
  "daemon/daemonTools.ts -> catalog/renderTools.js",
  "daemon/daemon.ts -> catalog/renderTools.js",
  "client/daemonClient.ts -> catalog/metaTools.js",
]);

/** Every `from "<relative>"` of a front-end file that lands in a folder below core, as `file -> folder/module`. */
function importsBelowCore(): string[] {
  const found: string[] = [];
  for (const frontEnd of FRONT_ENDS) {
    for (const rel of readdirSync(path.join("src", frontEnd), { recursive: true }) as string[]) {
      if (!rel.endsWith(".ts")) continue;
      const file = path.join("src", frontEnd, rel);
      for (const match of readFileSync(file, "utf8").matchAll(/from\s+"(\.[^"]+)"/g)) {
        const target = path.relative("src", path.resolve(path.dirname(file), match[1]!)).split(path.sep);
        if (BELOW_CORE.has(target[0]!)) found.push(`${frontEnd}/${rel.split(path.sep).join("/")} -> ${target.join("/")}`);
      }
    }
  }
  return found.sort();
}

describe("front ends", () => {
  it("import cache, catalog, summarize, upstream and policy only through core", () => {
    expect(importsBelowCore().filter((edge) => !PENDING.has(edge))).toEqual([]);
  });
});
