/**
 * ReDoS through a tool schema's `pattern`: `"^(a+)+$"` against a run of `a`s ending in `!` takes a
 * backtracking engine time doubling with each `a` (95 s at 33). Arguments were validated with
 * V8's engine on the main thread, so every other call waited, and the daemon's heartbeat stalled.
 * Patterns now run on a linear-time engine: the hostile call is answered at once (refused, as
 * the text does not match) and a healthy call beside it is answered too.
 */
import { describe, expect, it } from "vitest";
import { fixtureServerToml, writeConfig } from "../helpers/cliHarness.js";
import { serveOverStdio, type ServeSession } from "../helpers/serveHarness.js";
import { cleanUpMarkedProcesses } from "../helpers/markedProcesses.js";
import { useTempDir } from "../helpers/tempDir.js";

/** Enough `a`s that a backtracking engine would not finish within the life of the test run. */
const RUN = 48;
/** A hang guard, not a speed check: the old code never answers at all. */
const ANSWER_WITHIN_MS = 60_000;

const temp = useTempDir();
const { cleanups, markers } = cleanUpMarkedProcesses();

function text(result: unknown): string {
  return ((result as { content: { text: string }[] }).content[0] ?? { text: "" }).text;
}

describe("a catastrophic schema pattern", () => {
  it("is matched in linear time: the hostile call is refused and a healthy call beside it answered", async () => {
    const marker = `--redos-marker-${process.pid}-${Date.now()}`;
    markers.push(marker);
    const toml = ['mode = "compact"', `cache_dir = ${JSON.stringify(`${temp.path}/cache`)}`, fixtureServerToml("hostile", "hostileServer.ts", [marker])].join(
      "\n",
    );
    const session: ServeSession = await serveOverStdio(await writeConfig(temp.path, toml), ["--no-watch"]);
    // A client that stops waiting still leaves serve to be ended: the SDK's close escalates to SIGKILL.
    cleanups.push(() => session.close());
    const options = { timeout: ANSWER_WITHIN_MS };

    const [hostile, healthy] = await Promise.all([
      session.client.callTool({ name: "hostile_match", arguments: { text: `${"a".repeat(RUN)}!` } }, undefined, options),
      session.client.callTool({ name: "hostile_echo", arguments: { text: "still here" } }, undefined, options),
    ]);
    expect(hostile.isError).toBe(true);
    expect(text(hostile)).toMatch(/^Invalid arguments for hostile_match: text must match pattern "\^\(a\+\)\+\$"/);
    expect(text(healthy)).toBe("still here");
    // A long matching run is accepted and forwarded, also in linear time.
    expect(text(await session.client.callTool({ name: "hostile_match", arguments: { text: "a".repeat(100_000) } }, undefined, options))).toHaveLength(100_000);
  }, 180_000);

  it("a lookahead pattern is left to the server and named once in the log; the schema's other keywords still apply", async () => {
    const marker = `--redos-marker-${process.pid}-${Date.now()}`;
    markers.push(marker);
    const toml = ['mode = "compact"', `cache_dir = ${JSON.stringify(`${temp.path}/cache`)}`, fixtureServerToml("hostile", "hostileServer.ts", [marker])].join(
      "\n",
    );
    const session: ServeSession = await serveOverStdio(await writeConfig(temp.path, toml), ["--no-watch", "--log-level", "warn"]);
    cleanups.push(() => session.close());
    expect(text(await session.client.callTool({ name: "hostile_lookahead", arguments: { code: "abc" } }))).toBe("abc");
    expect(text(await session.client.callTool({ name: "hostile_lookahead", arguments: { code: "abc1" } }))).toBe("abc1");
    const tooLong = await session.client.callTool({ name: "hostile_lookahead", arguments: { code: "abcdefghi1" } });
    expect(text(tooLong)).toMatch(/code must NOT have more than 8 characters/);
    expect(session.stderr().match(/patterns a linear-time engine cannot run/g) ?? []).toHaveLength(1);
  }, 120_000);
});
