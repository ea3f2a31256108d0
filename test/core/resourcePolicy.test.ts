/**
 * Resource reads and prompt gets pass the same guard as tool calls, whichever front end asks:
 * audited, marked as untrusted output of their server, and held to its `max_output_bytes`. Checked
 * through an MCP session (the SDK client over an in-memory pair) in front of a real Bridge and a
 * real fixture server.
 */
import { readFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { createMcpFrontend, type McpFrontend } from "../../src/serve/mcpFrontend.js";
import { fixtureToml, startBridge } from "../policy/bridgeHarness.js";

const sessions: { client: Client; frontend: McpFrontend }[] = [];
afterEach(async () => {
  for (const { client, frontend } of sessions.splice(0)) {
    await client.close();
    frontend.dispose();
  }
});

/** A bridge over the resource fixture (halves of 8,000 bytes, limit 10,000) and a client session. */
async function session(): Promise<{ client: Client; dir: string; close: () => Promise<void> }> {
  const toml = `audit_log = "audit.jsonl"\nmode = "full"\n${fixtureToml("res", "resourceServer.ts", ["--big-bytes", "16000"], ["max_output_bytes = 10000"])}`;
  const { bridge, dir } = await startBridge(toml);
  const frontend = createMcpFrontend(bridge, { client: "test" });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await frontend.server.connect(serverSide);
  const client = new Client({ name: "resource-policy-test", version: "1" });
  await client.connect(clientSide);
  sessions.push({ client, frontend });
  return { client, dir, close: () => bridge.close() };
}

async function auditLines(dir: string): Promise<Record<string, unknown>[]> {
  return (await readFile(path.join(dir, "audit.jsonl"), "utf8"))
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

const trust = { "abridge/trust": "untrusted-tool-output", "abridge/server": "res" };

describe("the guard on resources and prompts", () => {
  it("audits a resource read, marks it untrusted and cuts it at max_output_bytes", async () => {
    const { client, dir, close } = await session();
    const small = await client.readResource({ uri: "fixture://small" });
    expect(small.contents).toEqual([{ uri: "fixture://small", mimeType: "text/plain", text: "small resource" }]);
    // The upstream's own _meta stays beside abridge's marking.
    expect(small._meta).toEqual({ "fixture/own": 1, ...trust });

    const big = await client.readResource({ uri: "fixture://big" });
    expect(big._meta).toMatchObject(trust);
    expect(big.contents).toHaveLength(2);
    expect((big.contents[0] as { text: string }).text).toHaveLength(8000);
    const marker = big.contents[1] as { uri: string; text: string };
    expect(marker.uri).toBe("fixture://big");
    expect(marker.text).toMatch(/^\[abridge: output cut: \d+ of \d+ bytes left out \(limit 10000\); kept 1 of 2 content blocks/);
    expect(JSON.stringify(big).length).toBeLessThan(10_500);

    await expect(client.readResource({ uri: "fixture://nope" })).rejects.toThrow(/no resource fixture:\/\/nope/);

    await close();
    const audit = await auditLines(dir);
    expect(audit.map((r) => [r.client, r.server, r.tool, r.outcome])).toEqual([
      ["test", "res", "resources/read", "ok"],
      ["test", "res", "resources/read", "ok"],
      ["test", "res", "resources/read", "error"],
    ]);
    // The URI is an argument: hashed, not written, unless audit_arguments = true.
    expect(JSON.stringify(audit)).not.toContain("fixture://");
  });

  it("audits a prompt get, marks it untrusted and cuts it at max_output_bytes", async () => {
    const { client, dir, close } = await session();
    const small = await client.getPrompt({ name: "res_small" });
    expect(small.messages).toEqual([{ role: "user", content: { type: "text", text: "small prompt" } }]);
    expect(small._meta).toEqual({ "fixture/own": 1, ...trust });

    const big = await client.getPrompt({ name: "res_big" });
    expect(big._meta).toMatchObject(trust);
    expect(big.description).toBe("big prompt");
    expect(big.messages).toHaveLength(2);
    expect(big.messages[0]).toMatchObject({ role: "user", content: { type: "text", text: "x".repeat(8000) } });
    expect(big.messages[1]).toMatchObject({
      role: "user",
      content: { type: "text", text: expect.stringMatching(/^\[abridge: output cut: .*kept 1 of 2 content blocks/) },
    });

    // A prompt no server lists is the client's mistake (-32602), never forwarded nor audited.
    await expect(client.getPrompt({ name: "res_nope" })).rejects.toMatchObject({ code: -32602, message: expect.stringContaining('unknown prompt "res_nope"') });

    await close();
    const audit = await auditLines(dir);
    expect(audit.map((r) => [r.client, r.server, r.tool, r.outcome])).toEqual([
      ["test", "res", "prompts/get", "ok"],
      ["test", "res", "prompts/get", "ok"],
    ]);
  });
});
