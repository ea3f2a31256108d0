/**
 * The bound on requests waiting for one server (`max_pending_requests`): while a server does not
 * read its stdin, calls past the bound fail at once with UPSTREAM_BUSY (retryable) instead of
 * queueing; those within it are answered once it reads again, and the server is not restarted.
 */
import { describe, expect, it } from "vitest";
import { AbridgeError, ErrorCode } from "../../src/model/errors.js";
import { fixtureServer } from "../helpers/processes.js";
import { memoryLogger } from "../helpers/memoryLogger.js";
import { makePool } from "./harness.js";

describe("UpstreamPool max_pending_requests", () => {
  it("refuses calls past the bound with UPSTREAM_BUSY (retryable) while the server stalls; the rest are answered", async () => {
    const { logger, lines, until } = memoryLogger();
    const pool = makePool({ servers: [fixtureServer("slow", "rawEchoServer.ts", ["--stall"], { max_pending_requests: 4 })], logger });
    await pool.start();
    const [pid] = pool.pids();
    const stalled = pool.callTool("slow", "stall", {});
    await until(() => lines.some((l) => l.includes(`stalled ${pid}`)), "the server to stop reading");
    const within = [1, 2, 3].map((i) => pool.callTool("slow", "echo", { text: `within ${i}` }));
    const past = await Promise.allSettled([4, 5, 6].map((i) => pool.callTool("slow", "echo", { text: `past ${i}` })));
    for (const outcome of past) {
      expect(outcome.status).toBe("rejected");
      const error = (outcome as PromiseRejectedResult).reason as AbridgeError;
      expect(error).toBeInstanceOf(AbridgeError);
      expect(error.code).toBe(ErrorCode.UPSTREAM_BUSY);
      expect(error.retryable).toBe(true);
      expect(error.message).toMatch(/slow: 4 requests already wait for this server \(max_pending_requests = 4\)/);
    }
    expect(lines.filter((l) => l.includes("server busy")).length).toBe(1);
    process.kill(pid!, "SIGUSR2");
    expect((await stalled).content).toEqual([{ type: "text", text: "read again" }]);
    expect((await Promise.all(within)).map((r) => r.content)).toEqual([1, 2, 3].map((i) => [{ type: "text", text: `within ${i}` }]));
    // Room again: the next call goes through, on the same process.
    expect((await pool.callTool("slow", "echo", { text: "after" })).content).toEqual([{ type: "text", text: "after" }]);
    expect(pool.pids()).toEqual([pid]);
    expect(lines.some((l) => l.includes("server has room again") && l.includes("refused=3"))).toBe(true);
    expect(lines.some((l) => l.includes("restarting"))).toBe(false);
  });
});
