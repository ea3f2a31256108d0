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
import { Watch } from "../helpers/waitFor.js";

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

/** Resolves once `echo`'s three tools are in the catalog (checked at every status and list change). */
function echoListed(bridge: Bridge): Promise<void> {
  const changes = new Watch();
  const stopStatus = bridge.onStatus(() => changes.changed());
  const stopList = bridge.onListChanged(() => changes.changed());
  return changes
    .until(() => bridge.tools("echo").length === 3, { what: "echo's tools in the catalog", timeoutMs: 60_000 })
    .finally(() => {
      stopStatus();
      stopList();
    });
}

async function cachedServers(cacheFile: string): Promise<string[]> {
  const text = await readFile(cacheFile, "utf8").catch(() => "");
  const keys = text
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => String((JSON.parse(l) as { key: string }).key));
  return [...new Set(keys.map((k) => k.slice(0, k.indexOf(":"))))].sort();
}

describe("summary jobs while the upstreams start", { timeout: 120_000 }, () => {
  it("lists a server that is up at once, and summarizes only once every server settled", async () => {
    const { bridge, gate, cacheFile } = await open(120_000);
    const listed = echoListed(bridge);
    bridge.begin();
    await listed;
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
    let summaries = 0;
    const written = new Watch();
    bridge.onSummary(() => {
      summaries += 1;
      written.changed();
    });
    const listed = echoListed(bridge);
    bridge.begin();
    await listed;
    // The jobs are let go when the grace ends: the first summary written says they were.
    await written.until(() => summaries > 0, { what: "a summary once the grace ended", timeoutMs: 60_000 });
    await bridge.drainSummaries();
    expect(await cachedServers(cacheFile)).toEqual(["echo"]);
    expect(bridge.status("late")?.state).toBe("connecting");
  });
});
