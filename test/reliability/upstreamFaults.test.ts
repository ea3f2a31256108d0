/**
 * Upstream faults the Bridge must survive: a crash mid-call, a hang (at start and during a call),
 * garbage and partial JSON on stdout, a 50 MB result (received and cut, no restart), no answer to initialize, an exit during
 * tools/list. The harness checks after each test that no child process is left.
 */
import { readFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { isAlive } from "../helpers/processes.js";
import { Watch, waitFor } from "../helpers/waitFor.js";
import { fixtureToml, resultText, startBridge } from "../policy/bridgeHarness.js";

describe("upstream faults", () => {
  it("crash mid-call: UPSTREAM_EXITED, the server restarts, the next call works, the audit says so", async () => {
    const toml = `audit_log = "audit.jsonl"\nmode = "full"\n${fixtureToml("crash", "crashServer.ts", ["--after", "1"])}`;
    const { bridge, dir, pids } = await startBridge(toml);
    expect(resultText(await bridge.callTool("crash_work", {}))).toBe("work 1 done");
    const firstPid = pids()[0];
    const statuses = new Watch();
    bridge.onStatus(() => statuses.changed());
    await expect(bridge.callTool("crash_work", {})).rejects.toMatchObject({ code: "UPSTREAM_EXITED", retryable: true });
    await statuses.until(() => bridge.servers()[0]?.state === "ready" && bridge.servers()[0]!.restarts >= 1, { what: "the restart" });
    expect(pids()[0]).not.toBe(firstPid);
    expect(resultText(await bridge.callTool("crash_echo", { text: "after" }))).toBe("after");
    await bridge.close();
    const outcomes = (await readFile(path.join(dir, "audit.jsonl"), "utf8"))
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { outcome: string; errorCode?: string });
    expect(outcomes.map((o) => [o.outcome, o.errorCode])).toEqual([
      ["ok", undefined],
      ["error", "UPSTREAM_EXITED"],
      ["ok", undefined],
    ]);
  });

  it("hang during a call: UPSTREAM_TIMEOUT, the connection stays usable", async () => {
    const { bridge } = await startBridge(`mode = "full"\n${fixtureToml("slow", "slowServer.ts", [], ["timeout_ms = 300"])}`);
    await expect(bridge.callTool("slow_sleep", { ms: 30_000 })).rejects.toMatchObject({ code: "UPSTREAM_TIMEOUT", retryable: true });
    const ok = await bridge.callTool("slow_sleep", { ms: 10, steps: 1 }, { timeoutMs: 20_000 });
    expect(resultText(ok)).toBe("slept 10 ms");
  });

  it("never answers initialize (and ignores SIGTERM): start times out, the process is killed, others start", async () => {
    const toml = `mode = "full"\n${fixtureToml("hang", "hangServer.ts", ["--ignore-sigterm"], ["connect_timeout_ms = 500"])}${fixtureToml("echo", "echoServer.ts")}`;
    const { bridge, pids } = await startBridge(toml);
    const atStart = pids();
    const hang = bridge.servers().find((s) => s.name === "hang");
    expect(hang).toMatchObject({ state: "failed", error: { code: "UPSTREAM_TIMEOUT" } });
    expect(bridge.servers().find((s) => s.name === "echo")?.state).toBe("ready");
    // The hung child is ended (SIGKILL after the grace periods), without waiting for close().
    // The start is retried in the background meanwhile, so new hung children come and go: the
    // ones alive at start (the first, perhaps a retry) must all end; echo's stays.
    // A pid's end is seen only by probing it: polled.
    await waitFor(() => atStart.filter(isAlive).length === 1, { what: "the hung server to be killed" });
    // The name points into a server that is down: that is what the caller hears, not "unknown tool".
    await expect(bridge.callTool("hang_anything", {})).rejects.toMatchObject({
      code: "UPSTREAM_UNAVAILABLE",
      retryable: true,
      message: expect.stringMatching(/server "hang" is failed: .*not ready within 500 ms/),
    });
    await expect(bridge.callServerTool("hang", "anything", {})).rejects.toMatchObject({ code: "UPSTREAM_UNAVAILABLE" });
  });

  it("exits during tools/list: a clear start failure with its stderr, nothing left running", async () => {
    const toml = `mode = "full"\n${fixtureToml("dies", "crashServer.ts", ["--exit-on-list"])}${fixtureToml("echo", "echoServer.ts")}`;
    const { bridge } = await startBridge(toml);
    const dies = bridge.servers().find((s) => s.name === "dies");
    expect(dies).toMatchObject({ state: "failed", error: { code: "UPSTREAM_START_FAILED" } });
    expect(dies?.error?.message).toContain("exiting during tools/list");
    expect(resultText(await bridge.callTool("echo_echo", { text: "fine" }))).toBe("fine");
  });

  it("garbage and partial JSON on stdout: skipped; a call answered only with garbage times out; no restart", async () => {
    const { bridge, lines } = await startBridge(`mode = "full"\n${fixtureToml("junk", "garbageServer.ts")}`);
    expect(resultText(await bridge.callTool("junk_partial", {}))).toBe("partial survived");
    await expect(bridge.callTool("junk_junk", {}, { timeoutMs: 1000 })).rejects.toMatchObject({ code: "UPSTREAM_TIMEOUT" });
    expect(resultText(await bridge.callTool("junk_echo", { text: "still here" }))).toBe("still here");
    expect(bridge.servers()[0]).toMatchObject({ state: "ready", restarts: 0 });
    expect(lines.some((l) => l.includes("upstream transport error"))).toBe(true);
  });

  it("a large result is cut to max_output_bytes at a block boundary; the server keeps serving", async () => {
    const { bridge } = await startBridge(`mode = "full"\n${fixtureToml("huge", "hugeOutputServer.ts")}`);
    // Blocks count by their JSON: 64 KiB of text + the 25 bytes of {"type":"text","text":""}.
    const block = 65536 + 25;
    const total = 128 * block;
    const result = await bridge.callTool("huge_huge", { mb: 8, blockKb: 64 });
    const blocks = result.content as { text: string }[];
    // 200,000 bytes hold three 64 KiB blocks; the fourth would not fit.
    expect(blocks).toHaveLength(4);
    expect(blocks[3]!.text).toContain(`${total - 3 * block} of ${total} bytes left out (limit 200000)`);
    expect(JSON.stringify(result).length).toBeLessThan(210_000);
    expect(result._meta).toMatchObject({ "abridge/trust": "untrusted-tool-output", "abridge/server": "huge" });
    expect(resultText(await bridge.callTool("huge_small", {}))).toBe("small");
  });

  it("a 50 MB result (over the SDK's 10 MiB line limit) is received and cut; the same process serves on", async () => {
    const { bridge, pids } = await startBridge(`mode = "full"\n${fixtureToml("huge", "hugeOutputServer.ts")}`);
    const firstPid = pids()[0];
    const block = 65536 + 25;
    const total = 800 * block;
    const result = await bridge.callTool("huge_huge", { mb: 50 });
    const blocks = result.content as { text: string }[];
    expect(blocks).toHaveLength(4);
    expect(blocks[3]!.text).toContain(`${total - 3 * block} of ${total} bytes left out (limit 200000)`);
    expect(result._meta).toMatchObject({ "abridge/trust": "untrusted-tool-output", "abridge/server": "huge" });
    // No restart: the connection that carried 50 MB answers the next call.
    expect(resultText(await bridge.callTool("huge_small", {}))).toBe("small");
    expect(bridge.servers()[0]).toMatchObject({ state: "ready", restarts: 0 });
    expect(pids()[0]).toBe(firstPid);
  });
});
