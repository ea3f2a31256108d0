/**
 * Cache file faults: a torn last line and garbage, a full disk (/dev/full), a read-only folder.
 * In each the bridge keeps serving from memory and nothing already stored is lost.
 */
import { execFile } from "node:child_process";
import { appendFile, mkdir, readFile, symlink } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { parseCacheLine } from "../../src/cache/parseCacheLine.js";
import { fixtureToml, resultText, startBridge } from "../policy/bridgeHarness.js";
import { useTempDir } from "../helpers/tempDir.js";

const run = promisify(execFile);
const temp = useTempDir();

function echoToml(tools: number): string {
  return `mode = "summary"\n${fixtureToml("echo", "echoServer.ts", ["--tools", String(tools)])}`;
}

describe("cache file faults", () => {
  it("a torn last line and garbage are skipped; stored entries survive; new lines start fresh", async () => {
    const cacheFile = path.join(temp.path, "summaries.jsonl");
    // Run 1 stores 7 summaries.
    const first = await startBridge(echoToml(5), { cacheFile });
    await first.bridge.drainSummaries();
    await first.bridge.close();
    const stored = (await readFile(cacheFile, "utf8")).trim().split("\n");
    expect(stored).toHaveLength(7);
    // A crash mid-write and some garbage.
    await appendFile(cacheFile, Buffer.concat([Buffer.from("\u0000\u00ff garbage\n"), Buffer.from('{"key":"echo:tool_9:00')]));

    const second = await startBridge(echoToml(6), { cacheFile });
    expect(second.bridge.discovery()[0]).toMatchObject({ tools: 8, hits: 7, queued: 1 });
    expect(second.bridge.stats().cache.invalidLines).toBe(2);
    await second.bridge.drainSummaries();
    await second.bridge.close();
    const lines = (await readFile(cacheFile, "utf8")).split("\n").filter((l) => l !== "");
    expect(lines.slice(0, 7)).toEqual(stored);
    // The new entry is a whole line of its own, not glued to the torn one.
    const last = parseCacheLine(lines[lines.length - 1]!);
    expect(last).toMatchObject({ ok: true, entry: { tool: "tool_006" } });
  });

  it("disk full (/dev/full): the write error is logged, summaries are served from memory, calls work", async () => {
    const cacheFile = path.join(temp.path, "summaries.jsonl");
    await symlink("/dev/full", cacheFile);
    const { bridge, lines } = await startBridge(echoToml(5), { cacheFile });
    await bridge.drainSummaries();
    expect(bridge.stats().cache.writeErrors).toBeGreaterThan(0);
    expect(lines.some((l) => l.includes("could not append to the summary cache") && l.includes("ENOSPC"))).toBe(true);
    expect(bridge.stats().catalog.summarized).toBe(7);
    expect(resultText(await bridge.callTool("echo_echo", { text: "full" }))).toBe("full");
  });

  it("read-only cache folder (a read-only bind mount, so it holds for root too): serves from memory, loses nothing", async () => {
    const cacheDir = path.join(temp.path, "cache");
    await mkdir(cacheDir);
    // 7 entries stored while writable (the probe run as is).
    const probe = ["--import", "tsx", path.join(import.meta.dirname, "readOnlyCacheProbe.ts"), temp.path];
    const writable = JSON.parse((await run(process.execPath, [...probe, "5"])).stdout) as Record<string, unknown>;
    expect(writable).toMatchObject({ hits: 0, writeErrors: 0, summarized: 7 });
    const before = await readFile(path.join(cacheDir, "summaries.jsonl"), "utf8");
    // Then one tool more, in a mount namespace where the cache folder is read-only.
    // unshare (util-linux, on every Linux) rather than bwrap: this is a test of the cache, and it
    // must not depend on the optional sandbox. A user namespace lets a non-root user mount too.
    const remountReadOnly = 'mount --bind "$0" "$0" && mount -o remount,ro,bind "$0" "$0" && exec "$@"';
    const readOnlyNamespace = ["--user", "--map-root-user", "--mount", "sh", "-c", remountReadOnly, cacheDir];
    const readOnly = JSON.parse((await run("unshare", [...readOnlyNamespace, process.execPath, ...probe, "6"])).stdout) as Record<string, unknown>;
    expect(readOnly).toMatchObject({ hits: 7, summarized: 8, call: [{ type: "text", text: "ro" }], warned: true });
    expect(readOnly.writeErrors).toBeGreaterThan(0);
    expect(await readFile(path.join(cacheDir, "summaries.jsonl"), "utf8")).toBe(before);
  });
});
