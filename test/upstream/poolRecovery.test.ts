/**
 * What the pool keeps across trouble and edits: a server that failed at start is retried until it
 * comes up, resource subscriptions outlive a restart or a reconnecting reload, and edits of
 * settings a running process does not depend on are applied without reconnecting.
 */
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { UpstreamNotification } from "../../src/model/types.js";
import { tempDir } from "../helpers/cliHarness.js";
import { fixtureServer, isAlive } from "../helpers/processes.js";
import { makePool, memoryLogger, trackPids, waitForStatus } from "./harness.js";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((c) => c()));
});

async function gateFile(): Promise<string> {
  const { dir, cleanup } = await tempDir();
  cleanups.push(cleanup);
  return path.join(dir, "gate");
}

describe("a server that fails at start", () => {
  it("is retried in the background, warned about once, and its tools appear when it comes up", async () => {
    const gate = await gateFile();
    const { logger, lines, until } = memoryLogger();
    const pool = makePool({
      servers: [fixtureServer("gated", "gatedServer.ts", ["--gate", gate, "--tools", "1"]), fixtureServer("echo", "echoServer.ts", ["--tools", "0"])],
      logger,
    });
    await pool.start();
    expect(pool.status("gated")).toMatchObject({ state: "failed", error: { code: "UPSTREAM_START_FAILED" } });
    expect(pool.status("gated")?.error?.message).toContain("gate closed");
    expect(pool.tools().map((t) => t.server)).not.toContain("gated");
    await expect(pool.callTool("gated", "echo", { text: "x" })).rejects.toMatchObject({ code: "UPSTREAM_UNAVAILABLE", retryable: true });

    // Attempts fail while the gate is closed: one warning, then debug lines only; still `failed`.
    const gatedLines = (): string[] => lines.filter((l) => l.includes("server=gated"));
    await until(() => gatedLines().filter((l) => l.includes("upstream start failed again")).length >= 2, "two failed retries");
    expect(pool.status("gated")).toMatchObject({ state: "failed", restarts: 0, error: { code: "UPSTREAM_START_FAILED" } });
    expect(gatedLines().filter((l) => l.startsWith("abridge warn"))).toHaveLength(1);
    expect(
      gatedLines()
        .filter((l) => l.includes("upstream start failed again"))
        .every((l) => l.startsWith("abridge debug")),
    ).toBe(true);

    const changed = new Promise<string>((resolve) => pool.once("toolsChanged", resolve));
    await writeFile(gate, "open");
    expect(await changed).toBe("gated");
    expect(pool.status("gated")).toMatchObject({ state: "ready", toolCount: 3 });
    expect(pool.status("gated")?.error).toBeUndefined();
    expect(
      pool
        .tools()
        .filter((t) => t.server === "gated")
        .map((t) => t.name),
    ).toEqual(["gated_add", "gated_echo", "gated_tool_001"]);
    expect(pool.resolve("gated_echo")).toEqual({ server: "gated", tool: "echo" });
    expect((await pool.callTool("gated", "echo", { text: "up" })).content).toEqual([{ type: "text", text: "up" }]);
    expect(lines.some((l) => l.includes("upstream started after failing at first"))).toBe(true);
  });

  it("is not retried when the start was cancelled", async () => {
    const gate = await gateFile();
    const { logger, lines } = memoryLogger();
    const pool = makePool({ servers: [fixtureServer("gated", "gatedServer.ts", ["--gate", gate], { connect_timeout_ms: 20_000 })], logger });
    const controller = new AbortController();
    controller.abort(new Error("stop"));
    await expect(pool.start(controller.signal)).rejects.toMatchObject({ code: "CANCELLED" });
    expect(pool.status("gated")).toMatchObject({ state: "failed", error: { code: "CANCELLED" } });
    expect(lines.some((l) => l.includes("retrying the upstream start"))).toBe(false);
    expect(lines.find((l) => l.includes("upstream failed to start"))).not.toContain("retrying=");
  });
});

describe("resource subscriptions", () => {
  it("are renewed when the server restarts and when a reload reconnects it", async () => {
    const { logger, lines, until } = memoryLogger();
    const config = fixtureServer("conf", "conformanceServer.ts");
    const pool = makePool({ servers: [config], logger });
    await pool.start();
    const updates: string[] = [];
    pool.on("notification", (server: string, n: UpstreamNotification) => {
      if (n.method === "notifications/resources/updated") updates.push(`${server} ${String(n.params.uri)}`);
    });
    const uri = "test://watched-resource";
    await pool.subscribeResource("conf", uri);
    const touch = async (): Promise<string> => {
      const result = await pool.callTool("conf", "test_update_resource", { uri });
      return (result.content as { text: string }[])[0]!.text;
    };
    expect(await touch()).toBe(`updated ${uri}`);
    await expect.poll(() => updates).toEqual([`conf ${uri}`]);

    // The process dies; its replacement has never heard of the subscription.
    const renewals = (): number => lines.filter((l) => l.includes("resource subscriptions renewed") && l.includes("renewed=1")).length;
    const [pid] = trackPids(pool);
    process.kill(pid!, "SIGKILL");
    await waitForStatus(pool, () => pool.status("conf")?.state === "restarting");
    await waitForStatus(pool, () => pool.status("conf")?.state === "ready");
    await until(() => renewals() === 1, "the renewed subscription after the restart");
    expect(await touch()).toBe(`updated ${uri}`);
    await expect.poll(() => updates).toEqual([`conf ${uri}`, `conf ${uri}`]);

    // A reload that changes how the server runs reconnects it: the new process is subscribed too.
    const before = trackPids(pool);
    const result = await pool.reconfigure([{ ...config, env: { ABRIDGE_TEST_RELOAD: "1" } }]);
    expect(result.changed).toEqual(["conf"]);
    expect(trackPids(pool)).not.toEqual(before);
    await until(() => renewals() === 2, "the renewed subscription after the reload");
    expect(await touch()).toBe(`updated ${uri}`);
    await expect.poll(() => updates).toHaveLength(3);

    // Unsubscribing still reaches the current process.
    await pool.unsubscribeResource("conf", uri);
    expect(await touch()).toBe(`not subscribed: ${uri}`);
  });
});

describe("reconfigure", () => {
  it("applies filter, prefix, timeout and policy edits in place: same process, call in flight kept, tools re-filtered at once", async () => {
    const slow = fixtureServer("slow", "slowServer.ts");
    const echo = fixtureServer("echo", "echoServer.ts", ["--tools", "2"]);
    const pool = makePool({ servers: [slow, echo] });
    await pool.start();
    const pidsBefore = trackPids(pool);
    expect(pidsBefore).toHaveLength(2);
    const events: string[] = [];
    pool.on("toolsChanged", (server) => events.push(server));
    const inFlight = pool.callTool("slow", "sleep", { ms: 1500, steps: 1 });

    const pending = pool.reconfigure([
      { ...slow, read_only: true, destructive: "deny", max_output_bytes: 1000, spill: true, timeout_ms: 60_000 },
      { ...echo, deny: ["tool_*"], prefix: false, connect_timeout_ms: 5_000 },
    ]);
    // Before reconfigure has awaited anything, filters and names already apply.
    expect(
      pool
        .tools()
        .filter((t) => t.server === "echo")
        .map((t) => t.name),
    ).toEqual(["add", "echo"]);
    expect(events).toEqual(["slow,echo"]);
    const result = await pending;
    expect(result).toEqual({ added: [], removed: [], changed: [], updated: ["slow", "echo"] });

    expect((await inFlight).content).toEqual([{ type: "text", text: "slept 1500 ms" }]);
    expect(trackPids(pool)).toEqual(pidsBefore);
    expect(pidsBefore.every(isAlive)).toBe(true);
    expect(pool.servers().map((s) => [s.name, s.state, s.restarts])).toEqual([
      ["echo", "ready", 0],
      ["slow", "ready", 0],
    ]);
    await expect(pool.callTool("echo", "tool_001", {})).rejects.toMatchObject({ code: "TOOL_FILTERED" });
    expect(pool.resolve("echo")).toEqual({ server: "echo", tool: "echo" });

    // Lifting the filter brings the tools back from the last listing, still without a reconnect.
    await pool.reconfigure([slow, echo]);
    expect(
      pool
        .tools()
        .filter((t) => t.server === "echo")
        .map((t) => t.name),
    ).toEqual(["echo_add", "echo_echo", "echo_tool_001", "echo_tool_002"]);
    expect((await pool.callTool("echo", "tool_001", { value: "v" })).isError).toBeUndefined();
    expect(trackPids(pool)).toEqual(pidsBefore);
  });
});
