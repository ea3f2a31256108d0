import { describe, expect, it } from "vitest";
import { UpstreamClient } from "../../../src/upstream/mcp/upstreamClient.js";

const V = "io.modelcontextprotocol/protocolVersion";
const INFO = "io.modelcontextprotocol/clientInfo";
const CAPS = "io.modelcontextprotocol/clientCapabilities";
/** What a stateless client in front of abridge may have put in the params it sent. */
const theirs = { [V]: "2026-07-28", [INFO]: { name: "their-client", version: "9" }, [CAPS]: {}, progressToken: "p1", "x.example/trace": "t" };

describe("UpstreamClient.withEnvelope", () => {
  it("over 2026-07-28: abridge's own envelope, whatever envelope the caller's params carried; other _meta kept", () => {
    const client = new UpstreamClient({ name: "abridge", version: "1.2.3" }, { capabilities: {} });
    client.era = "stateless";
    expect(client.withEnvelope({ name: "t" })).toEqual({
      name: "t",
      _meta: { [V]: "2026-07-28", [INFO]: { name: "abridge", version: "1.2.3" }, [CAPS]: { sampling: {}, elicitation: {}, roots: {} } },
    });
    expect(client.withEnvelope({ uri: "u", _meta: theirs })._meta).toEqual({
      [V]: "2026-07-28",
      [INFO]: { name: "abridge", version: "1.2.3" },
      [CAPS]: { sampling: {}, elicitation: {}, roots: {} },
      progressToken: "p1",
      "x.example/trace": "t",
    });
  });

  it("over the older revisions: no envelope key goes out (a dual server would take the request for a stateless one)", () => {
    const client = new UpstreamClient({ name: "abridge", version: "1.2.3" }, { capabilities: {} });
    client.era = "legacy";
    const plain = { name: "t", _meta: { progressToken: "p1" } };
    expect(client.withEnvelope(plain)).toBe(plain);
    expect(client.withEnvelope({ uri: "u", _meta: theirs })).toEqual({ uri: "u", _meta: { progressToken: "p1", "x.example/trace": "t" } });
  });
});
