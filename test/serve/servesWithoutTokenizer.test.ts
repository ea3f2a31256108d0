/**
 * Serving from a warm cache never loads the o200k tokenizer: `abridge summarize warm` (a process of
 * its own, as a user runs it) fills the cache from real fixture upstreams, counts included; then a
 * bridge in this process serves those upstreams through the MCP frontend `abridge serve` uses, and
 * lists in full, summary, compact, lazy and code mode leave the encoder unloaded
 * (`tokenizerLoaded()`; the bridge runs here so the process's own answer can be read).
 */
import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import { promisify } from "node:util";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { afterEach, describe, expect, it } from "vitest";
import { RENDERER_VERSION } from "../../src/catalog/renderTools.js";
import { loadConfig } from "../../src/config/loadConfig.js";
import { Bridge } from "../../src/core/bridge.js";
import { summaryCacheFile } from "../../src/core/cacheAdmin.js";
import { createMcpFrontend } from "../../src/serve/mcpFrontend.js";
import { countTokens, tokenizerLoaded } from "../../src/tokens/countTokens.js";
import { abridgeCommand } from "../helpers/abridgeCommand.js";
import { fixtureServerToml, pidsWithMarker, writeConfig } from "../helpers/cliHarness.js";
import { useTempDir } from "../helpers/tempDir.js";

const GITHUB_CORPUS = path.resolve(import.meta.dirname, "../../bench/corpus/servers/github.json");

describe("serving from a warm cache", () => {
  const temp = useTempDir({ marker: "notok" });
  let bridge: Bridge | undefined;
  afterEach(async () => {
    await bridge?.close();
    bridge = undefined;
    expect(pidsWithMarker(temp.marker)).toEqual([]);
  });

  it("lists every mode but auto without loading the tokenizer", async () => {
    const configFile = await writeConfig(
      temp.path,
      [
        `cache_dir = "cache"`,
        fixtureServerToml("echo", "echoServer.ts", ["--tools", "4", "--name", temp.marker]),
        // A recorded published server: tools whose forms are close in size, where the choice matters.
        fixtureServerToml("github", "../../bench/fixtures/corpusServer.ts", ["--file", GITHUB_CORPUS, temp.marker]),
      ].join("\n"),
    );
    // In a process of its own: warming counts every form, and this process must not have counted.
    const warm = abridgeCommand(["summarize", "warm", "--config", configFile]);
    await promisify(execFile)(warm.command, warm.args, { cwd: temp.path, env: { PATH: process.env.PATH, HOME: temp.path } });

    const config = await loadConfig({ configPath: configFile, cwd: temp.path, env: {} });
    const cacheFile = summaryCacheFile({ config, env: {}, cwd: temp.path });
    const lines = (await readFile(cacheFile, "utf8")).split("\n").filter((l) => l !== "");
    expect(lines.length).toBeGreaterThan(20);
    for (const line of lines) expect((JSON.parse(line) as { formTokens?: { renderer: number } }).formTokens?.renderer).toBe(RENDERER_VERSION);

    expect(tokenizerLoaded()).toBe(false);
    bridge = await Bridge.open({ config, cacheFile, env: {} });
    await bridge.start();
    const listed: Record<string, number> = {};
    for (const mode of ["compact", "full", "summary", "lazy", "code"] as const) {
      const frontend = createMcpFrontend(bridge, { mode });
      const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
      await frontend.server.connect(serverSide);
      const client = new Client({ name: "t", version: "1" });
      await client.connect(clientSide);
      listed[mode] = (await client.listTools()).tools.length;
      await client.close();
      expect(tokenizerLoaded(), `after listing in ${mode} mode`).toBe(false);
    }
    // Every tool was a hit: nothing was queued, which would have counted the new entry's forms.
    const stats = bridge.stats();
    expect(stats.catalog.misses).toBe(0);
    expect(stats.catalog.summarized).toBe(lines.length);
    expect(stats.queue.done).toBe(0);
    expect(listed.compact).toBe(lines.length + 1);
    expect(listed.full).toBe(lines.length);

    // The signal is live: the first count loads it.
    countTokens("hello");
    expect(tokenizerLoaded()).toBe(true);
  }, 180_000);
});
