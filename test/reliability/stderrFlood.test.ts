/**
 * An upstream that writes ~100 MiB to stderr with no newline. readline held the unfinished line as
 * one growing string: memory grew by the flood's size and, past V8's string limit (~512 MiB),
 * `RangeError: Invalid string length` ended `abridge serve` and the daemon alike. stderr lines are
 * now bounded like stdout's: a long line is cut, counted, and the first cut is logged.
 */
import { describe, expect, it } from "vitest";
import { fixtureServerToml, writeConfig } from "../helpers/cliHarness.js";
import { mib, peakRssBytes, rssBytes } from "../helpers/procMemory.js";
import { serveOverStdio, type ServeSession } from "../helpers/serveHarness.js";
import { cleanUpMarkedProcesses } from "../helpers/markedProcesses.js";
import { useTempDir } from "../helpers/tempDir.js";

const FLOOD_MIB = 96;
/** What the serve process may grow by while the flood passes: far below the flood itself. */
const GROWTH_BOUND_BYTES = 40 * 1024 * 1024;

const temp = useTempDir();
const { cleanups, markers } = cleanUpMarkedProcesses();

function text(result: unknown): string {
  return ((result as { content: { text: string }[] }).content[0] ?? { text: "" }).text;
}

describe("an upstream flooding stderr without a newline", () => {
  it(`${FLOOD_MIB} MiB in one line: serve stays small, cuts the line once, and keeps answering`, async () => {
    const marker = `--stderr-flood-marker-${process.pid}-${Date.now()}`;
    markers.push(marker);
    const toml = ['mode = "full"', `cache_dir = ${JSON.stringify(`${temp.path}/cache`)}`, fixtureServerToml("hostile", "hostileServer.ts", [marker])].join(
      "\n",
    );
    const config = await writeConfig(temp.path, toml);
    const session: ServeSession = await serveOverStdio(config, ["--log-level", "debug"]);
    cleanups.push(() => session.close());
    const pid = session.pid!;

    expect(text(await session.client.callTool({ name: "hostile_echo", arguments: { text: "before" } }))).toBe("before");
    const before = rssBytes(pid);
    const poured = await session.client.callTool({ name: "hostile_stderr_flood", arguments: { mb: FLOOD_MIB } }, undefined, { timeout: 120_000 });
    expect(text(poured)).toBe(`poured ${FLOOD_MIB} MiB`);
    // The short line after the flood is logged once everything before it has been read.
    await session.untilStderr("stderr flood done", "the line after the flood to be logged", 120_000);
    const growth = peakRssBytes(pid) - before;
    expect(growth, `serve grew by ${mib(growth)} while ${FLOOD_MIB} MiB of stderr passed`).toBeLessThan(GROWTH_BOUND_BYTES);

    const log = session.stderr();
    expect(log.match(/upstream stderr line over the limit: cut/g) ?? []).toHaveLength(1);
    expect(log).toContain("[line cut: over 8192 bytes; the rest is skipped]");
    // The whole flood never reaches the log: the cut line is its first 4 KiB and the marker.
    expect(log.length).toBeLessThan(1024 * 1024);
    expect(text(await session.client.callTool({ name: "hostile_echo", arguments: { text: "after" } }))).toBe("after");
  }, 240_000);
});
