/**
 * During the first start the pool takes the tool changes of servers coming up in one turn of the
 * event loop together (one renaming, one toolsChanged), and whoever waits for servers to settle
 * finds every tool of the servers that came up when the wait returns.
 */
import { describe, expect, it } from "vitest";
import { fixtureServer } from "../helpers/processes.js";
import { makePool } from "./harness.js";

const SERVERS = ["a", "b", "c", "d"];

describe("UpstreamPool first start", { timeout: 120_000 }, () => {
  it("has every ready server's tools named the moment waitSettled returns", async () => {
    const pool = makePool({ servers: SERVERS.map((name) => fixtureServer(name, "echoServer.ts", ["--tools", "1"])) });
    const changed: string[] = [];
    pool.on("toolsChanged", (server) => changed.push(server));
    const start = pool.start();
    expect(await pool.waitSettled(undefined, 100_000)).toBe(true);
    // No await in between: what a first tools/list reads right after its wait.
    expect(pool.tools()).toHaveLength(SERVERS.length * 3);
    for (const name of SERVERS) expect(pool.resolve(`${name}_echo`)).toEqual({ server: name, tool: "echo" });
    // Each server is announced, alone or together with others that came up in the same turn.
    expect(changed.flatMap((c) => c.split(",")).sort()).toEqual(SERVERS);
    await start;
  });

  it("has one server's tools named the moment a wait for that server returns", async () => {
    const pool = makePool({ servers: SERVERS.map((name) => fixtureServer(name, "echoServer.ts", ["--tools", "1"])) });
    const start = pool.start();
    expect(await pool.waitSettled(["c"], 100_000)).toBe(true);
    expect(pool.status("c")?.state).toBe("ready");
    expect(pool.exposedName("c", "tool_001")).toBe("c_tool_001");
    await start;
  });

  it("applies a change after the start at once", async () => {
    const pool = makePool({ servers: [fixtureServer("a", "echoServer.ts", ["--tools", "1"])] });
    await pool.start();
    const changed: string[] = [];
    pool.on("toolsChanged", (server) => changed.push(server));
    await pool.reconfigure([]);
    expect(changed).toContain("a");
    expect(pool.tools()).toEqual([]);
  });
});
