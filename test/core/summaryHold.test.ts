/**
 * While a front end serves during the upstreams' start, summary jobs are held: a server that comes
 * up early is listed at once, but its tools are summarized only when every server settled (or
 * `startup_grace_ms` passed), so summarizing does not take the CPU the other servers still need.
 */
import { readFile } from "node:fs/promises";
import path from "node:path";
import { writeFile } from "node:fs/promises";
import { afterEach, describe, expect, it } from "vitest";
import { parseConfigText } from "../../src/config/parseConfigText.js";
import { Bridge } from "../../src/core/bridge.js";
import { fixtureServerToml, tempDir } from "../helpers/cliHarness.js";

const bridges: Bridge[] = [];
const cleanups: (() => Promise<void>)[] = [];

afterEach(async () => {
  await Promise.allSettled(bridges.splice(0).map((b) => b.close()));
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

/** `echo` (up at once) and `late` (up once the gate file exists), one generated tool each. */
async function open(graceMs: number): Promise<{ bridge: Bridge; gate: string; cacheFile: string }> {
  const { dir, cleanup } = await tempDir("abridge-hold-");
  cleanups.push(cleanup);
  const gate = path.join(dir, "gate");
  const toml = [
    `mode = "compact"\nstartup_grace_ms = ${graceMs}\n`,
    fixtureServerToml("echo", "echoServer.ts", ["--tools", "1"], "connect_timeout_ms = 120000"),
    fixtureServerToml("late", "lateServer.ts", ["--gate", gate, "--tools", "1"], "connect_timeout_ms = 120000"),
  ].join("\n");
  const file = path.join(dir, "abridge.toml");
  const config = parseConfigText(toml, { file, env: {} });
  const cacheFile = path.join(dir, "cache", "summaries.jsonl");
  const bridge = await Bridge.open({ config, cacheFile, env: {} });
  bridges.push(bridge);
  return { bridge, gate, cacheFile };
}

async function waitFor(predicate: () => boolean, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error("condition not reached");
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function cachedServers(cacheFile: string): Promise<string[]> {
  const text = await readFile(cacheFile, "utf8").catch(() => "");
  const keys = text.split("\n").filter((l) => l.trim() !== "").map((l) => String((JSON.parse(l) as { key: string }).key));
  return [...new Set(keys.map((k) => k.slice(0, k.indexOf(":"))))].sort();
}

describe("summary jobs while the upstreams start", { timeout: 120_000 }, () => {
  it("lists a server that is up at once, and summarizes only once every server settled", async () => {
    const { bridge, gate, cacheFile } = await open(120_000);
    bridge.begin();
    await waitFor(() => bridge.tools("echo").length === 3);
    expect(bridge.status("late")?.state).toBe("connecting");
    // Nothing is queued yet, so the queue is drained at once and nothing was written.
    await bridge.drainSummaries();
    expect(bridge.stats().queue).toMatchObject({ queued: 0, running: 0, done: 0 });
    expect(await cachedServers(cacheFile)).toEqual([]);

    await writeFile(gate, "open");
    await bridge.start();
    await bridge.drainSummaries();
    expect(await cachedServers(cacheFile)).toEqual(["echo", "late"]);
    expect(bridge.tools().length).toBe(6);
  });

  it("summarizes what is up once startup_grace_ms has passed, with a server still starting", async () => {
    const { bridge, cacheFile } = await open(200);
    bridge.begin();
    await waitFor(() => bridge.tools("echo").length === 3);
    let cached: string[] = [];
    const deadline = Date.now() + 60_000;
    while (cached.length === 0 && Date.now() < deadline) {
      await bridge.drainSummaries();
      cached = await cachedServers(cacheFile);
      if (cached.length === 0) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(cached).toEqual(["echo"]);
    expect(bridge.status("late")?.state).toBe("connecting");
  });
});
