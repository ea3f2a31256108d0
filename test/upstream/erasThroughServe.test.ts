/**
 * Upstreams of both MCP revisions reached through abridge by a client of the older revision: the
 * 1.x SDK's Client over `abridge serve` (stdio), and the library's Bridge. A stateless upstream's
 * `input_required` becomes the sampling and elicitation requests that client already answers; a
 * handshake upstream's requests reach it as before; `protocol` mismatches are named errors.
 */
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { CreateMessageRequestSchema, ElicitRequestSchema, ListRootsRequestSchema, type CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterEach, describe, expect, it } from "vitest";
import { Bridge } from "../../src/core/bridge.js";
import { parseConfigText } from "../../src/config/parseConfigText.js";
import { isAbridgeError } from "../../src/model/errors.js";
import type { ClientRelay } from "../../src/model/types.js";
import { startDualEraHttp } from "../fixtures/dualEraServer.js";
import { fixtureServerToml, tempDir, writeConfig } from "../helpers/cliHarness.js";
import { BIN } from "../helpers/serveHarness.js";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A config of a stateless, a handshake and (over HTTP) a dual-era upstream, in full mode. */
async function eraConfig(protocols: { stateless?: string; legacy?: string; dual?: string } = {}): Promise<{ dir: string; file: string; toml: string }> {
  const { dir, cleanup } = await tempDir("abridge-eras-");
  cleanups.push(cleanup);
  const dual = await startDualEraHttp();
  cleanups.push(() => dual.close());
  const line = (p: string | undefined): string => (p === undefined ? "" : `protocol = ${JSON.stringify(p)}`);
  const toml = [
    'mode = "full"',
    fixtureServerToml("stateless", "statelessServer.ts", [], line(protocols.stateless)),
    fixtureServerToml("legacy", "legacyServer.ts", [], line(protocols.legacy)),
    `[servers.dual]\nurl = ${JSON.stringify(dual.url)}\n${line(protocols.dual)}\n`,
  ].join("\n");
  return { dir, file: await writeConfig(dir, toml), toml };
}

/** The 1.x SDK client over `abridge serve`, with the given client capabilities. */
async function serveClient(config: string, capabilities: Record<string, object>): Promise<Client> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: ["--import", "tsx", BIN, "serve", "--config", config],
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "" },
    stderr: "pipe",
  });
  const client = new Client({ name: "old-era-client", version: "1.0.0" }, { capabilities });
  await client.connect(transport);
  cleanups.push(() => client.close());
  return client;
}

const textOf = (result: unknown): string => (result as CallToolResult).content.map((c) => (c.type === "text" ? c.text : `[${c.type}]`)).join("\n");

describe("a 1.x SDK client over abridge serve (stdio)", () => {
  it("reaches stateless, handshake and dual-era upstreams, and answers a stateless server's input_required as requests", async () => {
    const { file } = await eraConfig();
    const client = await serveClient(file, { sampling: {}, elicitation: {}, roots: {} });
    const asked: string[] = [];
    client.setRequestHandler(ElicitRequestSchema, (request) => {
      asked.push(`elicit:${request.params.message}`);
      return { action: "accept", content: { name: "Ada" } };
    });
    client.setRequestHandler(CreateMessageRequestSchema, () => {
      asked.push("sample");
      return { role: "assistant", content: { type: "text", text: "forty-two" }, model: "m" };
    });
    client.setRequestHandler(ListRootsRequestSchema, () => {
      asked.push("roots");
      return { roots: [{ uri: "file:///work" }] };
    });
    const names = (await client.listTools()).tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(["stateless_echo", "legacy_echo", "dual_echo", "stateless_ask", "legacy_ask"]));
    for (const server of ["stateless", "legacy", "dual"]) {
      expect(textOf(await client.callTool({ name: `${server}_add`, arguments: { a: 20, b: 22 } }))).toBe("42");
    }
    expect(JSON.parse(textOf(await client.callTool({ name: "dual_whoami", arguments: {} })))).toMatchObject({
      era: "stateless",
      protocolVersion: "2026-07-28",
    });
    // A stateless upstream's input_required: asked of this client as the requests it knows.
    expect(textOf(await client.callTool({ name: "stateless_ask", arguments: {} }))).toBe("hello Ada");
    expect(textOf(await client.callTool({ name: "stateless_sample", arguments: { prompt: "?" } }))).toBe("the model said: forty-two");
    // roots/list: asked of this client, which declared roots.
    expect(textOf(await client.callTool({ name: "stateless_roots", arguments: {} }))).toBe("roots: file:///work");
    // A handshake upstream's own requests still reach it as before.
    expect(textOf(await client.callTool({ name: "legacy_ask", arguments: {} }))).toBe("hello Ada");
    expect(asked).toEqual(["elicit:What is your name?", "sample", "roots", "elicit:What is your name?"]);
  });

  it.each([
    ["auto", ["stateless", "legacy", "dual"], "stateless"],
    ["2026-07-28", ["stateless", "dual"], "stateless"],
    ["legacy", ["legacy", "dual"], "legacy"],
  ] as const)("protocol = %s on every upstream: the servers that speak it serve, the dual one in that revision", async (protocol, serving, dualEra) => {
    const { file } = await eraConfig({ stateless: protocol, legacy: protocol, dual: protocol });
    const client = await serveClient(file, { elicitation: {} });
    const names = (await client.listTools()).tools.map((t) => t.name);
    for (const server of ["stateless", "legacy", "dual"]) expect(names.includes(`${server}_echo`), server).toBe(serving.includes(server as never));
    for (const server of serving) expect(textOf(await client.callTool({ name: `${server}_echo`, arguments: { text: server } }))).toBe(server);
    expect(JSON.parse(textOf(await client.callTool({ name: "dual_whoami", arguments: {} })))).toMatchObject({ era: dualEra });
  });

  it("a client without elicitation or roots: the stateless call fails at once with the reason, and the server stays usable", async () => {
    const { file } = await eraConfig();
    const client = await serveClient(file, {});
    // A tool error the model can read, not a protocol error: the call itself was fine.
    const refused = await client.callTool({ name: "stateless_ask", arguments: {} });
    expect(refused.isError).toBe(true);
    expect(textOf(refused)).toMatch(
      /stateless: tools\/call needs elicitation\/create from the user's client, which could not answer.*\[UPSTREAM_INPUT_REQUIRED\]$/,
    );
    // Nor roots: refused as the client does not support it.
    const noRoots = await client.callTool({ name: "stateless_roots", arguments: {} });
    expect(noRoots.isError).toBe(true);
    expect(textOf(noRoots)).toMatch(/needs roots\/list from the user's client, which could not answer: .*does not support roots\/list/);
    expect(textOf(await client.callTool({ name: "stateless_echo", arguments: { text: "ok" } }))).toBe("ok");
  });
});

describe("the Bridge", () => {
  async function openBridge(protocols: Parameters<typeof eraConfig>[0]): Promise<Bridge> {
    const { dir, toml } = await eraConfig(protocols);
    const config = parseConfigText(toml, { file: path.join(dir, "abridge.toml"), env: {} });
    const bridge = await Bridge.open({ config, cacheFile: path.join(dir, "summaries.jsonl"), env: {} });
    cleanups.push(() => bridge.close());
    await bridge.start();
    return bridge;
  }

  it("protocol = 2026-07-28 on a handshake-only server: UPSTREAM_PROTOCOL naming the server and the revision; the others serve", async () => {
    const bridge = await openBridge({ legacy: "2026-07-28", stateless: "2026-07-28", dual: "legacy" });
    expect(bridge.status("legacy")).toMatchObject({ state: "failed", error: { code: "UPSTREAM_PROTOCOL" } });
    expect(bridge.status("legacy")?.error?.message).toMatch(
      /^legacy: protocol = "2026-07-28" but the server does not speak MCP 2026-07-28 \(server\/discover failed with -32601/,
    );
    const failed = await bridge.callTool("legacy_echo", { text: "x" }).then(
      () => undefined,
      (err: unknown) => err,
    );
    // A call to it says why it is down.
    expect(isAbridgeError(failed) ? failed.message : String(failed)).toContain("does not speak MCP 2026-07-28");
    expect(textOf(await bridge.callTool("stateless_echo", { text: "s" }))).toBe("s");
    expect(JSON.parse(textOf(await bridge.callTool("dual_whoami", {})))).toMatchObject({ era: "legacy" });
  });

  it("protocol = legacy on a stateless-only server: UPSTREAM_PROTOCOL saying it refused initialize", async () => {
    const bridge = await openBridge({ stateless: "legacy" });
    expect(bridge.status("stateless")).toMatchObject({
      state: "failed",
      error: { code: "UPSTREAM_PROTOCOL", message: expect.stringContaining('stateless: protocol = "legacy" but the server refused initialize') },
    });
  });

  it("passes a call's relay to a stateless server's input_required", async () => {
    const bridge = await openBridge({});
    const relay: ClientRelay = {
      client: "c",
      request: async () => ({ action: "accept", content: { name: "Grace" } }),
      notify() {},
    };
    expect(textOf(await bridge.callTool("stateless_ask", {}, { relay }))).toBe("hello Grace");
    await expect(bridge.callTool("stateless_ask", {})).rejects.toMatchObject({ code: "UPSTREAM_INPUT_REQUIRED" });
  });

  it("a protocol that is no revision is a config error naming the field", () => {
    expect(() => parseConfigText('[servers.x]\ncommand = "x"\nprotocol = "2099-01-01"\n', { file: "/tmp/abridge.toml", env: {} })).toThrow(
      /servers\.x\.protocol/,
    );
  });
});
