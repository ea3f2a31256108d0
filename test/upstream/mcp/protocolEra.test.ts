import { ErrorCode as RpcErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";
import { StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { beforeAll, describe, expect, it } from "vitest";
import { RPC_UNSUPPORTED_VERSION as UNSUPPORTED_PROTOCOL_VERSION } from "../../../src/model/mcpRevision.js";
import { classifyProbe, readDiscoverResult } from "../../../src/upstream/mcp/protocolEra.js";
import { loadHttpTransports } from "../../../src/upstream/mcp/lazyHttpTransport.js";

// An HTTP status error comes from an HTTP transport, which loads the SDK's transport modules first.
beforeAll(async () => {
  await loadHttpTransports();
});

const discover = (versions: string[]): Record<string, unknown> => ({
  resultType: "complete",
  supportedVersions: versions,
  capabilities: { tools: {} },
  _meta: { "io.modelcontextprotocol/serverInfo": { name: "s", version: "2" } },
});
const rpc = (code: number, data?: unknown): { error: unknown; closed: boolean } => ({ error: new McpError(code, "refused", data), closed: false });

describe("classifyProbe: how a server answered server/discover", () => {
  it("a discover result listing 2026-07-28 is a stateless server, with what it said of itself", () => {
    expect(classifyProbe("s", { result: discover(["2026-07-28", "2025-11-25"]) }, true)).toEqual({
      era: "stateless",
      discover: { supportedVersions: ["2026-07-28", "2025-11-25"], capabilities: { tools: {} }, serverInfo: { name: "s", version: "2" } },
    });
  });

  it("errors and answers of the older revisions mean initialize", () => {
    expect(classifyProbe("s", rpc(RpcErrorCode.MethodNotFound), true)).toMatchObject({ era: "legacy", closed: false });
    // -32000 from the server ("not initialized") is an answer, not the SDK's closed connection.
    expect(classifyProbe("s", rpc(-32000), false)).toMatchObject({ era: "legacy", closed: false });
    expect(classifyProbe("s", { result: {} }, false)).toMatchObject({ era: "legacy" });
    expect(classifyProbe("s", { result: discover(["2025-11-25"]) }, false)).toMatchObject({ era: "legacy" });
    expect(classifyProbe("s", rpc(UNSUPPORTED_PROTOCOL_VERSION, { supported: ["2025-11-25"] }), false)).toMatchObject({ era: "legacy" });
  });

  it("a stdio server that closed or kept silent is legacy; over HTTP that is a failed start", () => {
    const closed = { error: new McpError(RpcErrorCode.ConnectionClosed, "Connection closed"), closed: true };
    expect(classifyProbe("s", closed, true)).toMatchObject({ era: "legacy", closed: true });
    expect(() => classifyProbe("s", closed, false)).toThrow("Connection closed");
    const silent = { error: new McpError(RpcErrorCode.RequestTimeout, "Request timed out"), closed: false };
    expect(classifyProbe("s", silent, true)).toMatchObject({ era: "legacy", closed: false });
    expect(() => classifyProbe("s", silent, false)).toThrow("timed out");
    expect(() => classifyProbe("s", { error: new TypeError("fetch failed"), closed: false }, false)).toThrow("fetch failed");
  });

  it("over HTTP a bare 4xx is a server of the older revisions; 401, 403 and 5xx fail the start", () => {
    const http = (status: number): { error: unknown; closed: boolean } => ({
      error: new StreamableHTTPError(status, "Error POSTing to endpoint"),
      closed: false,
    });
    expect(classifyProbe("s", http(404), false)).toMatchObject({ era: "legacy", reason: "server/discover was refused with HTTP 404" });
    expect(classifyProbe("s", http(405), false)).toMatchObject({ era: "legacy" });
    for (const status of [401, 403, 502]) expect(() => classifyProbe("s", http(status), false)).toThrow("Error POSTing");
  });

  it("-32022 listing 2026-07-28 asks for the request again", () => {
    expect(classifyProbe("s", rpc(UNSUPPORTED_PROTOCOL_VERSION, { supported: ["2026-07-28"] }), false)).toMatchObject({ era: "retry" });
  });

  it("a server of stateless revisions that are not ours: UPSTREAM_PROTOCOL naming them", () => {
    expect(() => classifyProbe("s", { result: discover(["2099-01-01"]) }, true)).toThrow(
      expect.objectContaining({ code: "UPSTREAM_PROTOCOL", message: expect.stringContaining("s: the server speaks MCP 2099-01-01") }),
    );
    expect(() => classifyProbe("s", rpc(UNSUPPORTED_PROTOCOL_VERSION, { supported: ["2099-01-01"] }), true)).toThrow(
      expect.objectContaining({ code: "UPSTREAM_PROTOCOL" }),
    );
  });

  it("readDiscoverResult keeps only a well-formed result", () => {
    expect(readDiscoverResult({ supportedVersions: "2026-07-28", capabilities: {} })).toBeUndefined();
    expect(readDiscoverResult({ supportedVersions: ["2026-07-28"] })).toBeUndefined();
    expect(readDiscoverResult({ supportedVersions: ["2026-07-28"], capabilities: {}, instructions: "hi" })).toEqual({
      supportedVersions: ["2026-07-28"],
      capabilities: {},
      instructions: "hi",
    });
  });
});
