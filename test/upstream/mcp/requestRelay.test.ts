import { ErrorCode as RpcErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";
import { describe, expect, it } from "vitest";
import type { ClientRelay, JsonObject, UpstreamNotification } from "../../../src/model/types.js";
import { RequestRelay } from "../../../src/upstream/mcp/requestRelay.js";
import { memoryLogger } from "../harness.js";

/** A client as a front end would set it up: answers requests, keeps notifications. */
function client(id: string): ClientRelay & { asked: string[]; notified: string[] } {
  const asked: string[] = [];
  const notified: string[] = [];
  return {
    client: id,
    asked,
    notified,
    async request(method: string, params: JsonObject): Promise<JsonObject> {
      asked.push(method);
      return { answeredBy: id, echo: params };
    },
    notify(method: string) {
      notified.push(method);
    },
  };
}

const signal = new AbortController().signal;
const logLine: UpstreamNotification = { method: "notifications/message", params: { level: "info", data: "hi" } };

describe("RequestRelay", () => {
  it("asks the client whose calls are in flight, and sends it the log lines", async () => {
    const serverWide: UpstreamNotification[] = [];
    const relay = new RequestRelay({ server: "s", logger: memoryLogger().logger, onNotification: (n) => serverWide.push(n) });
    const alice = client("alice");
    relay.enter(1, alice);
    relay.enter(2, alice);
    await expect(relay.request("sampling/createMessage", { q: 1 }, signal)).resolves.toEqual({ answeredBy: "alice", echo: { q: 1 } });
    relay.log(logLine);
    expect(alice.notified).toEqual(["notifications/message"]);
    relay.leave(1);
    relay.leave(2);
    relay.log(logLine);
    expect(serverWide).toEqual([logLine]);
  });

  it("refuses rather than guess when calls of several clients overlap", async () => {
    const { logger, lines } = memoryLogger();
    const serverWide: UpstreamNotification[] = [];
    const relay = new RequestRelay({ server: "s", logger, onNotification: (n) => serverWide.push(n) });
    const alice = client("alice");
    const bob = client("bob");
    relay.enter(1, alice);
    relay.enter(2, bob);
    const refused = relay.request("elicitation/create", {}, signal);
    await expect(refused).rejects.toBeInstanceOf(McpError);
    await expect(refused).rejects.toMatchObject({ code: RpcErrorCode.InvalidRequest, message: expect.stringContaining("several clients") });
    expect(alice.asked).toEqual([]);
    expect(bob.asked).toEqual([]);
    expect(lines.some((l) => l.includes("refused an upstream request"))).toBe(true);
    // A log line nobody can be sure of is server-wide.
    relay.log(logLine);
    expect(serverWide).toEqual([logLine]);
    relay.leave(1);
    await expect(relay.request("elicitation/create", {}, signal)).resolves.toMatchObject({ answeredBy: "bob" });
  });

  it("refuses a request outside any call, or during a call with no client to ask", async () => {
    const relay = new RequestRelay({ server: "s", logger: memoryLogger().logger });
    await expect(relay.request("sampling/createMessage", {}, signal)).rejects.toMatchObject({ message: expect.stringContaining("outside any tools/call") });
    relay.enter(1, undefined);
    await expect(relay.request("sampling/createMessage", {}, signal)).rejects.toMatchObject({ message: expect.stringContaining("outside any tools/call") });
  });
});
