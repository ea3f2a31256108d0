/**
 * An upstream's own JSON-RPC error keeps its code and message, even when its code is one the SDK
 * also uses for its own failures (-32001 request timeout, -32000 connection closed): the upstream
 * answered, so it is neither a timeout nor a dead server, and retrying will not change the answer.
 */
import { describe, expect, it } from "vitest";
import { toWireOutcome } from "../../src/serve/frontendWire.js";
import { fixtureToml, resultText, startBridge } from "../policy/bridgeHarness.js";
import { messageOf } from "../../src/model/errors.js";

describe("upstream JSON-RPC errors", () => {
  it.each([
    [-32001, "quota exceeded for this key"],
    [-32000, "backend refused the request"],
    [-32050, "a vendor code"],
  ])("code %i from the upstream is passed through with its message, not retryable", async (code, message) => {
    const { bridge } = await startBridge(`mode = "full"\n${fixtureToml("host", "misbehavingServer.ts")}`);
    const err = await bridge.callTool("host_fail", { code, message }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "UPSTREAM_ERROR", retryable: false, details: { rpcCode: code } });
    expect(messageOf(err)).toContain(message);
    // On the wire the client sees the upstream's code, with its message.
    const wire = toWireOutcome(err);
    expect(wire).toMatchObject({ error: { code } });
    expect("error" in wire && wire.error.message).toContain(message);
    // The server is still up: nothing was restarted.
    expect(bridge.servers()[0]).toMatchObject({ state: "ready", restarts: 0 });
    expect(resultText(await bridge.callTool("host_wait", { ms: 1 }))).toBe("waited 1 ms");
  });

  it("a real timeout is still UPSTREAM_TIMEOUT, retryable", async () => {
    const { bridge } = await startBridge(`mode = "full"\n${fixtureToml("host", "misbehavingServer.ts", [], ["timeout_ms = 300"])}`);
    await expect(bridge.callTool("host_wait", { ms: 30_000 })).rejects.toMatchObject({ code: "UPSTREAM_TIMEOUT", retryable: true });
  });
});
