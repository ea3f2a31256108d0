/** A bridge over published servers that run offline, or over fixtures, opened the way the other benchmarks open one. */
import { mkdir } from "node:fs/promises";
import { createRequire } from "node:module";
import path from "node:path";
import { Bridge } from "../../src/core/bridge.js";
import { benchConfig, configToml } from "../benchConfig.js";

const require = createRequire(import.meta.url);

/** TOML of a server run as `node <bin> <args>`. */
function nodeServerToml(name: string, bin: string, args: readonly string[], env: Record<string, string> = {}): string {
  const envLine =
    Object.keys(env).length === 0
      ? ""
      : `env = { ${Object.entries(env)
          .map(([k, v]) => `${k} = ${JSON.stringify(v)}`)
          .join(", ")} }\n`;
  return `[servers.${JSON.stringify(name)}]\ncommand = ${JSON.stringify(process.execPath)}\nargs = ${JSON.stringify([bin, ...args])}\nconnect_timeout_ms = 120000\n${envLine}`;
}

/** The published servers of the tasks: filesystem on `dataDir`, memory in `stateDir`/memory.jsonl, everything over stdio. */
export function publishedServersToml(dataDir: string, stateDir: string): string[] {
  return [
    nodeServerToml("filesystem", require.resolve("@modelcontextprotocol/server-filesystem/dist/index.js"), [dataDir]),
    nodeServerToml("memory", require.resolve("@modelcontextprotocol/server-memory/dist/index.js"), [], {
      MEMORY_FILE_PATH: path.join(stateDir, "memory.jsonl"),
    }),
    nodeServerToml("everything", require.resolve("@modelcontextprotocol/server-everything/dist/index.js"), ["stdio"]),
  ];
}

/**
 * Opens and starts a bridge over `servers` (TOML blocks), default mode compact, with the offline
 * summarizer the config defaults to, its cache and state under `dir`, and waits for the summaries,
 * so the compact list is the one a client would be sent.
 */
export async function openBridge(dir: string, servers: readonly string[]): Promise<Bridge> {
  // Servers start in the config file's folder.
  await mkdir(dir, { recursive: true });
  const config = benchConfig(configToml(servers, "compact"), path.join(dir, "abridge.toml"));
  const bridge = await Bridge.open({ config, cacheFile: path.join(dir, "cache", "summaries.jsonl"), stateDir: path.join(dir, "state"), env: {} });
  try {
    await bridge.start();
    await bridge.drainSummaries();
  } catch (err) {
    await bridge.close();
    throw err;
  }
  return bridge;
}
