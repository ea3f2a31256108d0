import { describe, expect, it } from "vitest";
import type { ProgressUpdate } from "../../src/model/types.js";
import { fixtureServer } from "../helpers/processes.js";
import { makePool, memoryLogger } from "./harness.js";

describe("UpstreamPool calls", () => {
  it("returns results, passes isError results on, and answers other requests", async () => {
    const pool = makePool({ servers: [fixtureServer("echo", "echoServer.ts")] });
    await pool.start();
    const sum = await pool.callTool("echo", "add", { a: 2, b: 40 });
    expect(sum).toMatchObject({ content: [{ type: "text", text: "42" }], structuredContent: { sum: 42 } });
    const generated = await pool.callTool("echo", "tool_004", { value: "v" });
    expect(generated.content).toEqual([{ type: "text", text: JSON.stringify({ tool: "tool_004", args: { value: "v" } }) }]);
    // The echo fixture has no resources: listAll does not even ask, request gets the RPC error.
    expect(await pool.listAll("echo", "resources/list", "resources")).toEqual([]);
    await expect(pool.request("echo", "resources/list", {})).rejects.toMatchObject({ code: "UPSTREAM_ERROR" });
  });

  it("times out with UPSTREAM_TIMEOUT (retryable), per call or from timeout_ms", async () => {
    const pool = makePool({ servers: [fixtureServer("slow", "slowServer.ts", [], { timeout_ms: 300 })] });
    await pool.start();
    await expect(pool.callTool("slow", "sleep", { ms: 20_000 })).rejects.toMatchObject({ code: "UPSTREAM_TIMEOUT", retryable: true });
    await expect(pool.callTool("slow", "sleep", { ms: 20_000 }, { timeoutMs: 200 })).rejects.toMatchObject({
      code: "UPSTREAM_TIMEOUT",
      retryable: true,
    });
    // The connection is still usable afterwards.
    const ok = await pool.callTool("slow", "sleep", { ms: 10, steps: 1 }, { timeoutMs: 10_000 });
    expect(ok.content).toEqual([{ type: "text", text: "slept 10 ms" }]);
  });

  it("cancels: the caller's abort rejects with CANCELLED and reaches the server", async () => {
    const { logger, lines, until } = memoryLogger();
    const pool = makePool({ servers: [fixtureServer("slow", "slowServer.ts")], logger });
    await pool.start();
    const controller = new AbortController();
    const call = pool.callTool(
      "slow",
      "sleep",
      { ms: 30_000, steps: 300 },
      {
        signal: controller.signal,
        // Abort once the server is demonstrably working on it.
        onProgress: () => controller.abort(new Error("user pressed stop")),
      },
    );
    await expect(call).rejects.toMatchObject({ code: "CANCELLED" });
    // notifications/cancelled made the server stop (it says so on stderr).
    await until(() => lines.some((l) => l.includes("upstream stderr") && /cancelled \d+/.test(l)), "the server to see the cancellation");
    // An already-aborted signal is refused before anything is sent.
    await expect(pool.callTool("slow", "sleep", { ms: 1 }, { signal: AbortSignal.abort() })).rejects.toMatchObject({ code: "CANCELLED" });
  });

  it("passes progress notifications through", async () => {
    const pool = makePool({ servers: [fixtureServer("slow", "slowServer.ts")] });
    await pool.start();
    const updates: ProgressUpdate[] = [];
    const result = await pool.callTool("slow", "sleep", { ms: 200, steps: 4 }, { onProgress: (u) => updates.push(u) });
    expect(result.content).toEqual([{ type: "text", text: "slept 200 ms" }]);
    expect(updates).toEqual([1, 2, 3, 4].map((step) => ({ progress: step, total: 4, message: `step ${step} of 4` })));
  });
});
