import { describe, expect, it } from "vitest";
import type { ServerConfig } from "../../src/config/schema.js";
import { fixtureServer, isAlive, serverConfig } from "../helpers/processes.js";
import { makePool, memoryLogger, trackPids } from "./harness.js";

describe("UpstreamPool start and discovery", () => {
  it("follows nextCursor over 3 pages and keeps unknown tool keys as sent", async () => {
    const { logger, lines } = memoryLogger();
    const pool = makePool({ servers: [fixtureServer("echo", "echoServer.ts")], logger });
    await pool.start();
    expect(pool.status("echo")?.state).toBe("ready");
    const tools = pool.tools();
    expect(tools.map((t) => t.tool.name)).toEqual(["add", "echo", "tool_001", "tool_002", "tool_003", "tool_004", "tool_005"]);
    const echo = tools.find((t) => t.tool.name === "echo")!;
    expect(echo.name).toBe("echo_echo");
    expect(echo.uri).toBe("mcp://echo/echo");
    expect(echo.tool._meta).toEqual({ "fixture/kind": "echo" });
    expect(echo.tool["x-vendor"]).toEqual({ kept: true });
    expect(tools.find((t) => t.tool.name === "add")!.tool.execution).toEqual({ taskSupport: "forbidden" });
    // stderr is captured line by line with the server name.
    expect(lines.some((l) => l.includes("upstream stderr") && l.includes("server=echo") && l.includes("echo fixture ready"))).toBe(true);
    const status = pool.status("echo")!;
    expect(status.serverInfo).toEqual({ name: "echo-fixture", version: "1.0.0" });
    expect(status.toolCount).toBe(7);
    expect(pool.resolve("echo_tool_003")).toEqual({ server: "echo", tool: "tool_003" });
    expect(pool.resolve("nope")).toBeUndefined();
  });

  it("serves --tools N generated tools with --page-size", async () => {
    const pool = makePool({ servers: [fixtureServer("many", "echoServer.ts", ["--tools", "250", "--page-size", "40"])] });
    await pool.start();
    expect(pool.tools()).toHaveLength(252);
  });

  it("starts in parallel: a bad command and a hanging server are reported, the good ones are ready", async () => {
    const pool = makePool({
      servers: [
        fixtureServer("good1", "echoServer.ts"),
        serverConfig({ name: "badcmd", command: "/nonexistent/abridge-no-such-binary" }),
        serverConfig({ name: "exits", command: process.execPath, args: ["-e", "process.stderr.write('boom: missing token\\n'); process.exit(3)"] }),
        fixtureServer("hang", "hangServer.ts", [], { connect_timeout_ms: 3_000 }),
        fixtureServer("good2", "echoServer.ts", ["--tools", "1"]),
        serverConfig({ name: "off", command: "/nonexistent/never-started", enabled: false }),
      ],
    });
    await pool.start();
    const byName = Object.fromEntries(pool.servers().map((s) => [s.name, s]));
    expect(Object.keys(byName)).toEqual(["badcmd", "exits", "good1", "good2", "hang", "off"]);
    expect(byName.good1!.state).toBe("ready");
    expect(byName.good2!.state).toBe("ready");
    expect(byName.badcmd!.state).toBe("failed");
    expect(byName.badcmd!.error?.code).toBe("UPSTREAM_START_FAILED");
    expect(byName.badcmd!.error?.message).toMatch(/ENOENT/);
    expect(byName.exits!.state).toBe("failed");
    expect(byName.exits!.error?.code).toBe("UPSTREAM_START_FAILED");
    expect(byName.exits!.error?.message).toContain("boom: missing token");
    expect(byName.hang!.state).toBe("failed");
    expect(byName.hang!.error?.code).toBe("UPSTREAM_TIMEOUT");
    expect(byName.off!.state).toBe("disabled");
    expect(pool.tools().map((t) => t.server)).not.toContain("hang");
    await expect(pool.callTool("badcmd", "x", {})).rejects.toMatchObject({ code: "UPSTREAM_UNAVAILABLE" });
    await expect(pool.callTool("off", "x", {})).rejects.toMatchObject({ code: "UPSTREAM_UNAVAILABLE" });
    await expect(pool.callTool("missing", "x", {})).rejects.toMatchObject({ code: "SERVER_NOT_FOUND" });
  });

  it("close() ends a child that ignores stdin end and SIGTERM, and is idempotent", async () => {
    const pool = makePool({ servers: [fixtureServer("stubborn", "hangServer.ts", ["--ignore-sigterm"], { connect_timeout_ms: 1_500 })] });
    await pool.start();
    const pids = trackPids(pool);
    expect(pids).toHaveLength(1);
    expect(isAlive(pids[0]!)).toBe(true);
    const first = pool.close();
    expect(pool.close()).toBe(first);
    await first;
    expect(isAlive(pids[0]!)).toBe(false);
    expect(pool.status("stubborn")?.state).toBe("closed");
  });

  it("survives garbage and partial JSON on stdout", async () => {
    const pool = makePool({ servers: [fixtureServer("noisy", "noisyServer.ts")] });
    await pool.start();
    expect(pool.status("noisy")?.state).toBe("ready");
    for (let i = 0; i < 5; i++) {
      const result = await pool.callTool("noisy", "echo", { text: `hello ${i}` });
      expect(result.content).toEqual([{ type: "text", text: `hello ${i}` }]);
    }
  });

  it("applies allow/deny at discovery and refuses filtered tools, guessed names included", async () => {
    const pool = makePool({
      servers: [fixtureServer("echo", "echoServer.ts", [], { allow: ["echo", "add", "tool_00?"], deny: ["tool_002", "add"] })],
    });
    await pool.start();
    expect(pool.tools().map((t) => t.tool.name)).toEqual(["echo", "tool_001", "tool_003", "tool_004", "tool_005"]);
    expect(pool.resolve("echo_add")).toBeUndefined();
    // Both the denied and the never-allowed tools exist upstream and would answer if forwarded.
    await expect(pool.callTool("echo", "add", { a: 1, b: 2 })).rejects.toMatchObject({ code: "TOOL_FILTERED" });
    await expect(pool.callTool("echo", "tool_002", {})).rejects.toMatchObject({ code: "TOOL_FILTERED" });
    await expect(pool.request("echo", "tools/call", { name: "add", arguments: { a: 1, b: 2 } })).rejects.toMatchObject({
      code: "TOOL_FILTERED",
    });
    // Allowed by the globs but not served: unknown, not filtered.
    await expect(pool.callTool("echo", "tool_009", {})).rejects.toMatchObject({ code: "TOOL_NOT_FOUND" });
    const ok = await pool.callTool("echo", "echo", { text: "allowed" });
    expect(ok.content).toEqual([{ type: "text", text: "allowed" }]);
  });

  it("exposes only what its exposes decision lets through, asked with the config entry in force", async () => {
    const asked = new Set<ServerConfig>();
    // Not allow/deny: the pool applies whatever decision it is given, and knows no rule of its own.
    const pool = makePool({
      servers: [fixtureServer("echo", "echoServer.ts")],
      exposes: (server, tool) => {
        asked.add(server);
        return !tool.startsWith("tool_");
      },
    });
    await pool.start();
    expect(pool.tools().map((t) => t.tool.name)).toEqual(["add", "echo"]);
    expect(pool.status("echo")?.toolCount).toBe(2);
    expect(pool.resolve("echo_tool_001")).toBeUndefined();
    // tool_001 exists upstream and would answer if forwarded.
    await expect(pool.callTool("echo", "tool_001", {})).rejects.toMatchObject({ code: "TOOL_FILTERED" });
    // A recording is the server's whole answer: the decision does not apply to it.
    expect((await pool.recordTools("echo")).map((t) => t.name)).toContain("tool_001");
    expect([...asked].map((s) => s.name)).toEqual(["echo"]);
    // A reload that keeps the process hands the new entry to the next decision.
    const [entry] = asked;
    const edited = { ...entry!, timeout_ms: entry!.timeout_ms + 1 };
    const result = await pool.reconfigure([edited]);
    expect(result.updated).toEqual(["echo"]);
    asked.clear();
    await expect(pool.callTool("echo", "tool_002", {})).rejects.toMatchObject({ code: "TOOL_FILTERED" });
    expect([...asked]).toEqual([edited]);
  });

  it("two prefix = false servers exposing the same tool both serve: the first in the config keeps the name", async () => {
    const { logger, lines } = memoryLogger();
    const pool = makePool({
      servers: [
        fixtureServer("right", "echoServer.ts", ["--tools", "0"], { prefix: false, deny: ["add"] }),
        fixtureServer("left", "echoServer.ts", ["--tools", "0"], { prefix: false }),
      ],
      logger,
    });
    await pool.start();
    const names = new Map(pool.tools().map((t) => [`${t.server}/${t.tool.name}`, t.name]));
    expect(names.get("right/echo")).toBe("echo");
    expect(names.get("left/echo")).toMatch(/^echo_[0-9a-f]{6}$/);
    expect(names.get("left/add")).toBe("add");
    expect(pool.resolve(names.get("left/echo")!)).toEqual({ server: "left", tool: "echo" });
    expect(lines.filter((l) => l.includes("tool name taken by another tool"))).toHaveLength(1);
    expect(lines.find((l) => l.includes("tool name taken"))).toMatch(/server=left .*wanted=echo .*keptBy=right\/echo/);
  });
});
