/**
 * A name a client made from one of our tools (`mcp__abridge__gated_echo`) whose server is down gets
 * the same answer as our own name: the server is unavailable and why, not "unknown tool".
 */
import { describe, expect, it } from "vitest";
import { fixtureToml, startBridge } from "./bridgeHarness.js";

describe("client-prefixed names of a server that is down", () => {
  it("say the server is unavailable", async () => {
    const toml = `mode = "compact"\n${fixtureToml("gated", "gatedServer.ts", ["--gate", "{dir}/gate", "--tools", "0"])}${fixtureToml("echo", "echoServer.ts", ["--tools", "0"])}`;
    const { bridge } = await startBridge(toml);
    const unavailable = { code: "UPSTREAM_UNAVAILABLE", message: expect.stringMatching(/server "gated" is failed: .*gate closed/) };
    for (const name of ["mcp__abridge__gated_echo", "abridge__gated_echo", "mcp_abridge_gated_echo", "mcp://abridge/gated_echo"]) {
      expect(() => bridge.getSchema(name), name).toThrow(expect.objectContaining(unavailable));
      await expect(bridge.callTool("call_tool", { tool: name, arguments: { text: "x" } }), name).rejects.toMatchObject(unavailable);
    }
    // A name glued to ours without a client's separator stays unknown.
    expect(() => bridge.getSchema("xgated_echo")).toThrow(expect.objectContaining({ code: "TOOL_NOT_FOUND" }));
  }, 60_000);
});
