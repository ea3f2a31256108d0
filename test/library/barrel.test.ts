import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

/** Every module `file` imports, transitively, within src/. */
function importGraph(entry: string): Set<string> {
  const seen = new Set<string>();
  const visit = (file: string): void => {
    if (seen.has(file)) return;
    seen.add(file);
    const text = readFileSync(file, "utf8");
    for (const match of text.matchAll(/^(?:import|export)\s[^;]*?from\s+"(\.{1,2}\/[^"]+)"/gms)) {
      if (/^import\s+type\s/.test(match[0]) || /^export\s+type\s/.test(match[0])) continue;
      visit(path.resolve(path.dirname(file), match[1]!.replace(/\.js$/, ".ts")));
    }
  };
  visit(entry);
  return seen;
}

describe("library entry", () => {
  it("never pulls in the CLI", () => {
    const graph = [...importGraph(path.resolve("src/index.ts"))].map((f) => path.relative(path.resolve("src"), f));
    expect(graph.filter((f) => f.startsWith("cli/"))).toEqual([]);
    // The host client shares the protocol and lockfile code with the daemon, never the daemon itself.
    expect(graph.filter((f) => ["daemon/daemon.ts", "daemon/daemonSession.ts", "daemon/daemonTools.ts"].includes(f))).toEqual([]);
    expect(graph).toContain("client/daemonClient.ts");
    expect(graph).toContain("core/bridge.ts");
  });

  it("exports only explicit names, and the core works through them", async () => {
    const text = readFileSync("src/index.ts", "utf8");
    expect(text).not.toMatch(/export \*/);
    const lib = await import("../../src/index.js");
    expect(typeof lib.Bridge.open).toBe("function");
    expect(lib.renderTools([], "lazy").map((t) => t.name)).toEqual(["search_tools", "get_schema", "call_tool"]);
  });

  it("dependencies point one way: nothing below the front ends imports them", () => {
    const layers: Record<string, string[]> = {
      config: ["policy", "upstream", "cache", "summarize", "catalog", "core", "serve", "daemon", "cli", "client"],
      upstream: ["policy", "cache", "summarize", "catalog", "core", "serve", "daemon", "cli", "client"],
      cache: ["policy", "summarize", "catalog", "core", "serve", "daemon", "cli", "client"],
      summarize: ["policy", "catalog", "core", "serve", "daemon", "cli", "client"],
      catalog: ["policy", "core", "serve", "daemon", "cli", "client"],
      policy: ["core", "serve", "daemon", "cli", "client"],
      core: ["serve", "daemon", "cli", "client"],
      serve: ["daemon", "cli"],
    };
    const problems: string[] = [];
    for (const [layer, forbidden] of Object.entries(layers)) {
      for (const rel of readdirSync("src", { recursive: true }) as string[]) {
        if (!rel.endsWith(".ts")) continue;
        const file = path.resolve("src", rel);
        if (!rel.startsWith(`${layer}/`)) continue;
        const text = readFileSync(file, "utf8");
        for (const match of text.matchAll(/from\s+"\.\.\/([a-z]+)\//g)) {
          if (forbidden.includes(match[1]!)) problems.push(`${rel} imports ${match[1]}/`);
        }
      }
    }
    expect(problems).toEqual([]);
  });
});
