/**
 * A bridge opened with `begin` (what `serve` does) spawns its upstreams before it opens the
 * summary cache, so a child's start-up runs beside the bridge's own loading instead of after it.
 * Observed with real processes: at the moment the bridge logs that it opens the cache, the
 * upstream's process exists (found in /proc by a marker in its environment), or not yet without
 * `begin`. A server that is ready before the bridge is built is in the catalog at once, and a
 * bridge that fails to open leaves no child behind.
 */
import { execFileSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { mkdir, open as openFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { parseConfigText } from "../../src/config/parseConfigText.js";
import { Bridge, type BridgeOptions } from "../../src/core/bridge.js";
import { observedFileFor } from "../../src/code/view/observedFile.js";
import { createLogger, type Logger } from "../../src/log/logger.js";
import { ErrorCode } from "../../src/model/errors.js";
import { fixtureServerToml, tempDir, TEST_STARTUP_GRACE } from "../helpers/cliHarness.js";

const bridges: Bridge[] = [];
const cleanups: (() => Promise<void>)[] = [];

afterEach(async () => {
  await Promise.allSettled(bridges.splice(0).map((b) => b.close()));
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

/** Pids of this process's children whose environment holds `MARK=<mark>`. */
function markedChildren(mark: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (ppid !== process.pid) continue;
      if (readFileSync(`/proc/${entry}/environ`, "utf8").split("\0").includes(`MARK=${mark}`)) found.push(Number(entry));
    } catch {
      // Gone meanwhile, or not ours to read.
    }
  }
  return found;
}

/** A logger that hands `on` every message as it is logged, before the bridge's next statement runs. */
function observingLogger(on: (message: string) => void): Logger {
  return createLogger({ level: "debug", json: true, sink: (line) => on(String((JSON.parse(line) as { message: unknown }).message)) });
}

/** Options of a bridge over a fresh folder; `toml` gets that folder and returns the servers (and any other keys). */
async function setup(toml: (dir: string) => string): Promise<{ dir: string; options: BridgeOptions }> {
  const { dir, cleanup } = await tempDir("abridge-order-");
  cleanups.push(cleanup);
  const file = path.join(dir, "abridge.toml");
  const config = parseConfigText(`mode = "compact"\n${TEST_STARTUP_GRACE}${toml(dir)}`, { file, env: {} });
  return { dir, options: { config, cacheFile: path.join(dir, "cache", "summaries.jsonl"), env: {} } };
}

const markedEcho = (mark: string): string => fixtureServerToml("echo", "echoServer.ts", ["--tools", "1"], `env = { MARK = "${mark}" }`);

describe("start-up order of a bridge", { timeout: 120_000 }, () => {
  it("with begin, spawns the upstream before it opens the summary cache", async () => {
    const mark = randomUUID();
    const { options } = await setup(() => markedEcho(mark));
    let atCacheOpen: number[] | undefined;
    const logger = observingLogger((message) => {
      if (message === "opening the summary cache") atCacheOpen = markedChildren(mark);
    });
    const bridge = await Bridge.open({ ...options, logger, begin: {} });
    bridges.push(bridge);
    expect(atCacheOpen).toHaveLength(1);
    expect(bridge.childPids()).toEqual(atCacheOpen);
    // The start it began is the bridge's own: a list waits for it and has the server's tools.
    expect(await bridge.waitReady(bridge.config.startup_grace_ms)).toBe(true);
    expect(bridge.tools("echo").map((t) => t.tool.name)).toEqual(["add", "echo", "tool_001"]);
  });

  it("without begin, opens the cache first and spawns nothing until start", async () => {
    const mark = randomUUID();
    const { options } = await setup(() => markedEcho(mark));
    let atCacheOpen: number[] | undefined;
    const logger = observingLogger((message) => {
      if (message === "opening the summary cache") atCacheOpen = markedChildren(mark);
    });
    const bridge = await Bridge.open({ ...options, logger });
    bridges.push(bridge);
    expect(atCacheOpen).toEqual([]);
    expect(bridge.childPids()).toEqual([]);
    await bridge.start();
    expect(bridge.tools("echo")).toHaveLength(3);
  });

  it("has the tools of a server that was ready before the bridge was built", async () => {
    // `early` answers while the bridge still opens: the bridge's last read before it is built
    // (its observed result shapes) is a FIFO this test opens for writing only once `early` is
    // ready. `late` keeps the start from settling, so only the bridge's look at what came
    // meanwhile can put `early`'s tools in the catalog.
    const { dir, options } = await setup((folder) =>
      [
        fixtureServerToml("early", "echoServer.ts", ["--tools", "1"], "connect_timeout_ms = 120000"),
        fixtureServerToml("late", "lateServer.ts", ["--gate", path.join(folder, "gate"), "--tools", "1"], "connect_timeout_ms = 120000"),
      ].join("\n"),
    );
    await mkdir(path.join(dir, "cache"), { recursive: true });
    const fifo = observedFileFor(options.cacheFile);
    execFileSync("mkfifo", [fifo]);
    let released: Promise<void> | undefined;
    const logger = observingLogger((message) => {
      if (message === "upstream ready") released ??= openFile(fifo, "w").then((handle) => handle.close());
    });
    const bridge = await Bridge.open({ ...options, logger, begin: {} });
    bridges.push(bridge);
    await released;
    expect(bridge.status("early")?.state).toBe("ready");
    expect(bridge.status("late")?.state).toBe("connecting");
    expect(bridge.tools("early").map((t) => t.tool.name)).toEqual(["add", "echo", "tool_001"]);
    expect(bridge.list().map((t) => t.name)).toEqual(expect.arrayContaining(["early_add", "early_echo", "early_tool_001"]));
  });

  it("ends the upstreams it spawned when opening fails after the spawn", async () => {
    const mark = randomUUID();
    // The audit log's path is a folder: the guard, opened after the spawn, cannot open it.
    const { options } = await setup((dir) => `audit_log = ${JSON.stringify(dir)}\n${markedEcho(mark)}`);
    let atCacheOpen: number[] = [];
    const logger = observingLogger((message) => {
      if (message === "opening the summary cache") atCacheOpen = markedChildren(mark);
    });
    await expect(Bridge.open({ ...options, logger, begin: {} })).rejects.toMatchObject({ code: ErrorCode.CACHE_IO });
    expect(atCacheOpen).toHaveLength(1);
    expect(markedChildren(mark)).toEqual([]);
  });
});
