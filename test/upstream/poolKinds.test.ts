/**
 * The pool holds its three kinds of upstream (a live MCP server, a JSON-RPC backend, a recorded
 * tool list) through the one `Upstream` interface: one pool serves all three side by side, each
 * answering what it cannot do in its own way, and the factory gives each config entry its kind.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ServerConfig } from "../../src/config/schema.js";
import { isAbridgeError, messageOf } from "../../src/model/errors.js";
import { exposesTool } from "../../src/policy/allowDeny.js";
import type { Upstream } from "../../src/upstream/upstream.js";
import { createUpstream } from "../../src/upstream/upstreamFactory.js";
import { EXPOSED_TOOLS, startJsonRpcBackend, writeBackendManifests, type Backend } from "../fixtures/jsonRpcBackend.js";
import { fixtureServer, serverConfig } from "../helpers/processes.js";
import { makePool, memoryLogger } from "./harness.js";

const RECORDED_TOOLS = [{ name: "read_page", description: "Reads a page.", inputSchema: { type: "object", properties: { id: { type: "string" } } } }];

describe("the pool's three kinds of upstream", () => {
  let dir: string;
  let backend: Backend | undefined;
  let made: Upstream[] = [];

  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), "abridge-kinds-"));
    await writeBackendManifests(path.join(dir, "manifests"));
    await writeFile(path.join(dir, "wiki.json"), JSON.stringify({ tools: RECORDED_TOOLS }));
  });
  afterEach(async () => {
    await Promise.all(made.splice(0).map((upstream) => upstream.close()));
    await backend?.close();
    backend = undefined;
    await rm(dir, { recursive: true, force: true });
  });

  const live = (): ServerConfig => fixtureServer("live", "echoServer.ts", ["--tools", "1"]);
  const jsonRpc = (fields: Partial<ServerConfig> = {}): ServerConfig =>
    serverConfig({ name: "rpc", transport: "jsonrpc", jsonrpc: `unix:${path.join(dir, "backend.sock")}`, manifests: path.join(dir, "manifests"), ...fields });
  const recorded = (file = "wiki.json"): ServerConfig => serverConfig({ name: "wiki", transport: "recorded", recorded: path.join(dir, file) });

  it("serves all three side by side: tools, calls, requests, lists and pids each as its kind answers them", async () => {
    backend = await startJsonRpcBackend(path.join(dir, "backend.sock"));
    const pool = makePool({ servers: [live(), jsonRpc(), recorded()] });
    await pool.start();
    expect(pool.servers().map((s) => [s.name, s.transport, s.state])).toEqual([
      ["live", "stdio", "ready"],
      ["rpc", "jsonrpc", "ready"],
      ["wiki", "recorded", "ready"],
    ]);
    const byServer = (server: string): string[] =>
      pool
        .tools()
        .filter((t) => t.server === server)
        .map((t) => t.tool.name);
    expect(byServer("live")).toEqual(["add", "echo", "tool_001"]);
    expect(byServer("rpc")).toEqual([...EXPOSED_TOOLS].sort());
    expect(byServer("wiki")).toEqual(["read_page"]);

    expect(await pool.callTool("live", "add", { a: 2, b: 3 })).toMatchObject({ structuredContent: { sum: 5 } });
    expect(await pool.callTool("rpc", "add", { a: 2, b: 3 })).toEqual({ content: [{ type: "text", text: "5" }] });
    await expect(pool.callTool("wiki", "read_page", { id: "x" })).rejects.toMatchObject({ code: "UPSTREAM_RECORDED" });

    // Neither the JSON-RPC backend nor the recorded list has resources: each refuses in its own terms.
    await expect(pool.request("rpc", "resources/read", { uri: "x" })).rejects.toMatchObject({ code: "CAPABILITY_UNSUPPORTED" });
    await expect(pool.request("wiki", "resources/read", { uri: "x" })).rejects.toMatchObject({ code: "UPSTREAM_RECORDED" });
    for (const server of ["live", "rpc", "wiki"]) expect(await pool.listAll(server, "resources/list", "resources")).toEqual([]);

    expect((await pool.recordTools("rpc")).map((t) => t.name).sort()).toEqual([...EXPOSED_TOOLS].sort());
    expect(await pool.recordTools("wiki")).toEqual(RECORDED_TOOLS);
    // Only the live server runs a child process of abridge's.
    expect(pool.pids()).toHaveLength(1);
  });

  it("fails the start with every config mistake a kind reports (recorded file, manifests folder), not with a live server's failure", async () => {
    await writeFile(path.join(dir, "bad.json"), JSON.stringify({ tools: [{ name: "" }] }));
    const { logger } = memoryLogger();
    const pool = makePool({
      servers: [fixtureServer("gone", "no-such-fixture.ts"), jsonRpc({ manifests: path.join(dir, "missing") }), recorded("bad.json")],
      retryFailedStart: false,
      logger,
    });
    const error = await pool.start().catch((err: unknown) => err);
    expect(isAbridgeError(error, "CONFIG_INVALID")).toBe(true);
    const message = messageOf(error);
    expect(message).toContain(`servers.wiki.recorded: ${path.join(dir, "bad.json")}`);
    expect(message).toContain(`servers.rpc.manifests: cannot read the manifests folder ${path.join(dir, "missing")}`);
    const live = pool.status("gone");
    expect(live?.state).toBe("failed");
    expect(live?.error?.code).not.toBe("CONFIG_INVALID");
    expect(message).not.toContain(live?.error?.message);
  });

  it("the factory gives each config entry its kind behind the interface", async () => {
    const options = { logger: memoryLogger().logger, exposes: exposesTool, onStatusChanged: () => {}, onToolsChanged: () => {} };
    const [mcp, rpc, file] = [live(), jsonRpc(), recorded()].map((config) => createUpstream(config, options));
    made = [mcp!, rpc!, file!];
    // Only a live MCP server has resource subscriptions, which a new process forgets.
    expect(made.map((u) => [u.name, u.resubscribeOnReady])).toEqual([
      ["live", true],
      ["rpc", false],
      ["wiki", false],
    ]);
    // Nothing started yet, so nothing fails a start.
    expect(made.map((u) => u.startError())).toEqual([undefined, undefined, undefined]);
    expect(made.map((u) => u.status().transport)).toEqual(["stdio", "jsonrpc", "recorded"]);

    await file!.start();
    expect(file!.tools().map((t) => t.name)).toEqual(["read_page"]);
    expect(file!.startError()).toBeUndefined();
  });
});
