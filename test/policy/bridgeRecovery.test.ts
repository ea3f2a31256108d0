/**
 * The Bridge while servers are down or being reconfigured: a call to a down server's tool says
 * the server is down (not "unknown tool"), its tools arrive when it comes up, and a policy edit
 * shows in the list at once, without reconnecting the server.
 */
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { parseConfigText } from "../../src/config/parseConfigText.js";
import { Watch } from "../helpers/waitFor.js";
import { fixtureToml, resultText, startBridge } from "./bridgeHarness.js";

describe("a server that is down", () => {
  it("its tool names get UPSTREAM_UNAVAILABLE naming the server and why; its tools appear once it is up", async () => {
    const toml = `mode = "compact"\n${fixtureToml("gated", "gatedServer.ts", ["--gate", "{dir}/gate", "--tools", "0"])}${fixtureToml("echo", "echoServer.ts", ["--tools", "0"])}`;
    const { bridge, dir } = await startBridge(toml);
    expect(bridge.servers().find((s) => s.name === "gated")?.state).toBe("failed");
    const unavailable = { code: "UPSTREAM_UNAVAILABLE", retryable: true, message: expect.stringMatching(/server "gated" is failed: .*gate closed/) };
    await expect(bridge.callTool("gated_echo", { text: "x" })).rejects.toMatchObject(unavailable);
    await expect(bridge.callTool("mcp://gated/echo", { text: "x" })).rejects.toMatchObject(unavailable);
    await expect(bridge.callTool("call_tool", { tool: "gated_echo", arguments: { text: "x" } })).rejects.toMatchObject(unavailable);
    expect(() => bridge.getSchema("gated_echo")).toThrow(expect.objectContaining(unavailable));
    await expect(bridge.callTool("get_schema", { tool: "gated_echo" })).rejects.toMatchObject(unavailable);
    // Names that point at no down server stay unknown, with suggestions.
    await expect(bridge.callTool("echo_ehco", {})).rejects.toMatchObject({ code: "TOOL_NOT_FOUND" });
    await expect(bridge.callTool("nowhere_echo", {})).rejects.toMatchObject({ code: "TOOL_NOT_FOUND" });

    const listChanged = new Watch();
    bridge.onListChanged(() => listChanged.changed());
    await writeFile(path.join(dir, "gate"), "open");
    await listChanged.until(() => bridge.list().some((t) => t.name === "gated_echo"), { what: "the gated server's tools" });
    expect(resultText(await bridge.callTool("gated_echo", { text: "up now" }))).toBe("up now");
  });
});

describe("applyConfig", () => {
  it("shows a policy edit in the list at once, without reconnecting, while a new server is still connecting", async () => {
    const fs = fixtureToml("fs", "annotatedServer.ts");
    const { bridge, dir, pids } = await startBridge(`mode = "full"\n${fs}`);
    const before = pids();
    expect(bridge.list().map((t) => t.name)).toContain("fs_write_file");
    const next = parseConfigText(
      `mode = "full"\n${fixtureToml("fs", "annotatedServer.ts", [], ["read_only = true"])}${fixtureToml("hang", "hangServer.ts", [], ["connect_timeout_ms = 2000"])}`,
      { file: path.join(dir, "abridge.toml"), env: {} },
    );
    const applying = bridge.applyConfig(next);
    // The guard refuses write_file from now on, so the list must not offer it meanwhile.
    const listed = bridge.list().map((t) => t.name);
    expect(listed).toContain("fs_read_file");
    expect(listed).not.toContain("fs_write_file");
    expect(resultText(await bridge.callTool("fs_write_file", {}))).toContain("servers.fs.read_only");
    const result = await applying;
    expect(result).toMatchObject({ added: ["hang"], removed: [], changed: [], updated: ["fs"] });
    // fs kept its process.
    expect(pids().filter((pid) => before.includes(pid))).toEqual(before);
    expect(bridge.servers().find((s) => s.name === "fs")).toMatchObject({ state: "ready", restarts: 0 });
  });
});
