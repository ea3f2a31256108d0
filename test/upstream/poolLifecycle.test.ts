import { describe, expect, it } from "vitest";
import { fixtureServer, isAlive } from "../helpers/processes.js";
import { makePool, memoryLogger, trackPids, waitForStatus } from "./harness.js";

describe("UpstreamPool restart and list_changed", () => {
  it("crash: the call in flight gets UPSTREAM_EXITED, calls while down UPSTREAM_UNAVAILABLE, then it restarts", async () => {
    const pool = makePool({ servers: [fixtureServer("crashy", "crashServer.ts", ["--after", "1"])] });
    await pool.start();
    const [firstPid] = trackPids(pool);
    expect(firstPid).toBeDefined();
    expect((await pool.callTool("crashy", "work", {})).content).toEqual([{ type: "text", text: "work 1 done" }]);

    const states: string[] = [];
    pool.on("statusChanged", (s) => states.push(s.state));
    await expect(pool.callTool("crashy", "work", {})).rejects.toMatchObject({ code: "UPSTREAM_EXITED", retryable: true });
    // The replacement needs a process spawn at least, so the server is still down right now.
    expect(pool.status("crashy")?.state).toBe("restarting");
    await expect(pool.callTool("crashy", "echo", { text: "x" })).rejects.toMatchObject({ code: "UPSTREAM_UNAVAILABLE", retryable: true });

    await waitForStatus(pool, () => pool.status("crashy")?.state === "ready");
    expect(states).toEqual(["restarting", "ready"]);
    expect(pool.status("crashy")?.restarts).toBe(1);
    expect(isAlive(firstPid!)).toBe(false);
    const [secondPid] = trackPids(pool);
    expect(secondPid).not.toBe(firstPid);
    expect((await pool.callTool("crashy", "echo", { text: "back" })).content).toEqual([{ type: "text", text: "back" }]);
  });

  it("a server that exits during tools/list fails to start", async () => {
    const pool = makePool({ servers: [fixtureServer("listcrash", "crashServer.ts", ["--exit-on-list"])] });
    await pool.start();
    expect(pool.status("listcrash")).toMatchObject({ state: "failed", error: { code: "UPSTREAM_START_FAILED" } });
    expect(pool.status("listcrash")?.error?.message).toContain("exiting during tools/list");
  });

  it("list_changed: re-lists the server (once per burst) and emits toolsChanged", async () => {
    const { logger, lines, until } = memoryLogger();
    const pool = makePool({ servers: [fixtureServer("dyn", "listChangedServer.ts"), fixtureServer("echo", "echoServer.ts")], logger });
    await pool.start();
    expect(
      pool
        .tools()
        .filter((t) => t.server === "dyn")
        .map((t) => t.name),
    ).toEqual(["dyn_add_tool"]);
    const changed: string[] = [];
    const event = new Promise<void>((resolve) => pool.once("toolsChanged", () => resolve()));
    pool.on("toolsChanged", (server) => changed.push(server));

    await pool.callTool("dyn", "add_tool", { name: "fresh.tool", burst: 5 });
    await event;
    expect(changed).toEqual(["dyn"]);
    expect(
      pool
        .tools()
        .filter((t) => t.server === "dyn")
        .map((t) => t.name),
    ).toEqual(["dyn_add_tool", "dyn_fresh_tool"]);
    expect(pool.resolve("dyn_fresh_tool")).toEqual({ server: "dyn", tool: "fresh.tool" });
    expect(pool.status("dyn")?.toolCount).toBe(2);
    expect((await pool.callTool("dyn", "fresh.tool", {})).content).toEqual([{ type: "text", text: "called fresh.tool" }]);
    // Five notifications in a row led to one or two re-lists, not five.
    const listings = (): number => lines.filter((l) => l.includes("server=dyn") && /tools\/list \d/.test(l)).length;
    await until(() => lines.some((l) => l.includes("upstream tools re-listed")), "the re-list log line");
    expect(listings()).toBeGreaterThanOrEqual(2);
    expect(listings()).toBeLessThanOrEqual(3);
  });
});
