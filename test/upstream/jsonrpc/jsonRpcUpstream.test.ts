import { spawn, type ChildProcess } from "node:child_process";
import { rename, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ServerConfig } from "../../../src/config/schema.js";
import { isAbridgeError, messageOf } from "../../../src/model/errors.js";
import type { ServerStatus } from "../../../src/model/types.js";
import { exposesTool } from "../../../src/policy/allowDeny.js";
import { UpstreamPool } from "../../../src/upstream/upstreamPool.js";
import { BACKEND_MANIFESTS, EXPOSED_TOOLS, startJsonRpcBackend, writeBackendManifests, type Backend } from "../../fixtures/jsonRpcBackend.js";
import { fixtureCommand, serverConfig } from "../../helpers/processes.js";
import { useTempDir } from "../../helpers/tempDir.js";

const FAST_BACKOFF = { baseMs: 20, factor: 2, capMs: 100, resetAfterMs: 30_000 };

type Text = { type: string; text: string };
const textOf = (result: { content?: unknown[] | undefined }): string => (result.content as Text[])[0]!.text;

/** Resolves once `pool` reports `server` in `state`. */
function stateReached(pool: UpstreamPool, server: string, state: ServerStatus["state"]): Promise<void> {
  if (pool.status(server)?.state === state) return Promise.resolve();
  return new Promise((resolve) => {
    const onStatus = (status: ServerStatus): void => {
      if (status.name !== server || status.state !== state) return;
      pool.off("statusChanged", onStatus);
      resolve();
    };
    pool.on("statusChanged", onStatus);
  });
}

describe("a JSON-RPC backend in the upstream pool", () => {
  const temp = useTempDir({ prefix: "abridge-jrpc-" });
  let socket: string;
  let manifests: string;
  let backend: Backend | undefined;
  let child: ChildProcess | undefined;
  let pool: UpstreamPool | undefined;

  beforeEach(async () => {
    socket = path.join(temp.path, "backend.sock");
    manifests = path.join(temp.path, "manifests");
    await writeBackendManifests(manifests);
  });
  afterEach(async () => {
    await pool?.close();
    pool = undefined;
    await backend?.close();
    backend = undefined;
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child!.once("exit", resolve));
      child.kill("SIGKILL");
      await exited;
    }
    child = undefined;
  });

  const config = (fields: Partial<ServerConfig> = {}): ServerConfig =>
    serverConfig({ name: "svc", transport: "jsonrpc", jsonrpc: `unix:${socket}`, manifests, ...fields });
  const openPool = async (fields: Partial<ServerConfig> = {}, extra: { jsonRpcMaxLineBytes?: number } = {}): Promise<UpstreamPool> => {
    pool = new UpstreamPool({ servers: [config(fields)], separator: "_", exposes: exposesTool, backoff: FAST_BACKOFF, ...extra });
    await pool.start();
    return pool;
  };

  it("lists the manifests' tools, leaves out mcpExpose: false and unmapped ones, and maps results", async () => {
    backend = await startJsonRpcBackend(socket);
    const p = await openPool();
    expect(p.status("svc")).toMatchObject({ state: "ready", transport: "jsonrpc", toolCount: EXPOSED_TOOLS.length });
    expect(p.tools().map((t) => t.tool.name)).toEqual(EXPOSED_TOOLS);
    const add = p.tools().find((t) => t.tool.name === "add")!.tool;
    expect(add).toEqual((BACKEND_MANIFESTS["calc/manifest.json"] as { tools: unknown[] }).tools[0]);

    const sum = await p.callTool("svc", "add", { a: 2, b: 3 });
    expect(sum).toEqual({ content: [{ type: "text", text: "5" }] });
    expect(await p.callTool("svc", "say", { name: "Ada" })).toEqual({ content: [{ type: "text", text: "hello Ada" }] });
    expect(await p.callTool("svc", "nothing", {})).toEqual({ content: [{ type: "text", text: "null" }] });
    const echoed = await p.callTool("svc", "echo_object", { value: "v" });
    expect(echoed.structuredContent).toEqual({ received: { value: "v" } });
    expect(JSON.parse(textOf(echoed))).toEqual({ received: { value: "v" } });

    const failed = await p.callTool("svc", "fail", {});
    expect(failed.isError).toBe(true);
    expect(textOf(failed)).toBe('JSON-RPC error -32001: quota exceeded\ndata: {"retryAfterS":5}');
    expect(failed._meta).toEqual({ "abridge/jsonrpc-error": { code: -32001, message: "quota exceeded", data: { retryAfterS: 5 } } });

    // No arguments: params is {} (never omitted).
    await p.callTool("svc", "nothing", undefined);
    expect(backend.stats().params.at(-1)).toEqual({});

    await expect(p.callTool("svc", "internal", {})).rejects.toMatchObject({ code: "TOOL_NOT_FOUND" });
    await expect(p.callTool("svc", "orphan", {})).rejects.toMatchObject({ code: "TOOL_NOT_FOUND" });
    expect(backend.stats().requests["sys.stats"]).toBeUndefined();
    await expect(p.request("svc", "resources/read", { uri: "x" })).rejects.toMatchObject({ code: "CAPABILITY_UNSUPPORTED" });
    expect(await p.listAll("svc", "resources/list", "resources")).toEqual([]);
  });

  it("applies allow/deny before anything is sent", async () => {
    backend = await startJsonRpcBackend(socket);
    const p = await openPool({ deny: ["fail", "gate_*"] });
    expect(p.tools().map((t) => t.tool.name)).not.toContain("fail");
    await expect(p.callTool("svc", "fail", {})).rejects.toMatchObject({ code: "TOOL_FILTERED" });
    expect(backend.stats().requests["sys.fail"]).toBeUndefined();
  });

  it("matches answers that come out of order to their calls, pipelined", async () => {
    backend = await startJsonRpcBackend(socket);
    const p = await openPool();
    const tags = ["a", "b", "c", "d", "e", "f"];
    const waits = tags.map((tag) => p.callTool("svc", "gate_wait", { tag }));
    // Every wait must have reached the backend before the gate opens.
    while ((backend.stats().requests["gate.wait"] ?? 0) < tags.length) await new Promise((r) => setImmediate(r));
    const opened = await p.callTool("svc", "gate_open", {});
    expect(opened.structuredContent).toEqual({ released: tags.length });
    const results = await Promise.all(waits);
    expect(results.map((r) => r.structuredContent)).toEqual(tags.map((tag) => ({ tag })));
    expect(backend.stats().gateOrder).toEqual([...tags].reverse());
    // Pipelined over a few connections, not one per call.
    expect(backend.stats().connections).toBeLessThanOrEqual(4);
  });

  it("fails the calls on a connection the backend closes with UPSTREAM_UNAVAILABLE (retryable), then goes on", async () => {
    backend = await startJsonRpcBackend(socket);
    const p = await openPool();
    const crash = p.callTool("svc", "crash", {});
    await expect(crash).rejects.toMatchObject({ code: "UPSTREAM_UNAVAILABLE", retryable: true });
    await expect(crash).rejects.toThrow(/svc: the connection to unix:.*closed during sys\.crash/);
    expect(await p.callTool("svc", "add", { a: 1, b: 1 })).toEqual({ content: [{ type: "text", text: "2" }] });
  });

  it("skips garbage lines and answers to nobody, fails a call answered only with garbage by its timeout, and an over-long answer at once", async () => {
    backend = await startJsonRpcBackend(socket, { garbage: true });
    const p = await openPool({ timeout_ms: 300 }, { jsonRpcMaxLineBytes: 64 * 1024 });
    expect(await p.callTool("svc", "add", { a: 20, b: 22 })).toEqual({ content: [{ type: "text", text: "42" }] });
    const junk = p.callTool("svc", "junk", {});
    await expect(junk).rejects.toMatchObject({ code: "UPSTREAM_TIMEOUT", retryable: true });
    const huge = p.callTool("svc", "huge", { bytes: 200_000 }, { timeoutMs: 60_000 });
    await expect(huge).rejects.toMatchObject({ code: "UPSTREAM_ERROR" });
    await expect(huge).rejects.toThrow(/over the 65536-byte limit/);
    // Still serving on the same backend (on a fresh connection: a line over the limit ends its own).
    expect(await p.callTool("svc", "say", { name: "again" })).toEqual({ content: [{ type: "text", text: "hello again" }] });
    expect(p.status("svc")?.state).toBe("ready");
  });

  it("drops a cancelled call's id and ignores its late answer; a timeout follows timeout_ms", async () => {
    backend = await startJsonRpcBackend(socket);
    const p = await openPool({ timeout_ms: 200 });
    const controller = new AbortController();
    const slow = p.callTool("svc", "slow", { ms: 300 }, { signal: controller.signal });
    while ((backend.stats().requests["sys.slow"] ?? 0) < 1) await new Promise((r) => setImmediate(r));
    controller.abort();
    await expect(slow).rejects.toMatchObject({ code: "CANCELLED" });
    await expect(p.callTool("svc", "slow", { ms: 2_000 })).rejects.toMatchObject({ code: "UPSTREAM_TIMEOUT", retryable: true });
    // The late answers arrive on the same connections and are ignored; the next call gets its own.
    expect(await p.callTool("svc", "add", { a: 1, b: 2 }, { timeoutMs: 5_000 })).toEqual({ content: [{ type: "text", text: "3" }] });
  });

  it("lists the tools while the backend is down, fails calls fast as UPSTREAM_UNAVAILABLE, and reconnects when it comes back", async () => {
    const p = await openPool();
    expect(p.status("svc")).toMatchObject({ state: "failed", error: { code: "UPSTREAM_UNAVAILABLE" } });
    expect(p.tools().map((t) => t.tool.name)).toEqual(EXPOSED_TOOLS);
    const down = p.callTool("svc", "add", { a: 1, b: 1 });
    await expect(down).rejects.toMatchObject({ code: "UPSTREAM_UNAVAILABLE", retryable: true });

    // The backend as a real process.
    const { command, args } = fixtureCommand("jsonRpcBackend.ts", ["--socket", socket]);
    child = spawn(command, args, { stdio: ["ignore", "pipe", "inherit"] });
    await new Promise<void>((resolve) => child!.stdout!.on("data", (b: Buffer) => b.toString().includes("ready") && resolve()));
    await stateReached(p, "svc", "ready");
    expect(await p.callTool("svc", "add", { a: 1, b: 1 })).toEqual({ content: [{ type: "text", text: "2" }] });

    // Killed during a call: the call fails (retryable), the server is restarting, tools stay listed.
    const slow = p.callTool("svc", "slow", { ms: 10_000 });
    const restarting = stateReached(p, "svc", "restarting");
    child.kill("SIGKILL");
    await expect(slow).rejects.toMatchObject({ code: "UPSTREAM_UNAVAILABLE", retryable: true });
    await restarting;
    expect(p.tools()).toHaveLength(EXPOSED_TOOLS.length);
  });

  it("re-lists when a manifest changes, appears or goes, and tells the pool", async () => {
    backend = await startJsonRpcBackend(socket);
    const p = await openPool();
    const changed = new Promise<void>((resolve) => p.once("toolsChanged", () => resolve()));
    await rm(path.join(manifests, "calc"), { recursive: true });
    await changed;
    expect(p.tools().map((t) => t.tool.name)).not.toContain("add");
    await expect(p.callTool("svc", "add", { a: 1, b: 1 })).rejects.toMatchObject({ code: "TOOL_NOT_FOUND" });

    const added = new Promise<void>((resolve) => p.once("toolsChanged", () => resolve()));
    await writeFile(
      path.join(manifests, "extra.json"),
      JSON.stringify({ id: "extra", tools: [{ name: "plus", inputSchema: { type: "object" } }], implementation: { methods: { plus: "calc.add" } } }),
    );
    await added;
    expect(p.tools().map((t) => t.tool.name)).toContain("plus");
    expect(await p.callTool("svc", "plus", { a: 4, b: 4 })).toEqual({ content: [{ type: "text", text: "8" }] });
  });

  it("keeps a broken manifest's previous tools until it is fixed; a folder that goes and comes back is followed", async () => {
    backend = await startJsonRpcBackend(socket);
    const p = await openPool();
    const next = (): Promise<void> => new Promise((resolve) => p.once("statusChanged", () => resolve()));
    const calc = path.join(manifests, "calc", "manifest.json");

    // A half-written edit: the status reports it, the tools stay.
    const reported = next();
    await writeFile(calc, '{"id": "calc", "tools": [');
    await reported;
    expect(p.status("svc")?.error?.message).toContain(`${calc}: its previous 2 tool(s) are kept until it is fixed`);
    expect(p.tools().map((t) => t.tool.name)).toContain("add");

    // The folder goes: no tools. A new one is put in its place: its tools, and its edits, are seen.
    const gone = new Promise<void>((resolve) => p.once("toolsChanged", () => resolve()));
    await rm(manifests, { recursive: true });
    await gone;
    expect(p.tools()).toEqual([]);
    expect(p.status("svc")?.error?.code).toBe("CONFIG_INVALID");
    const back = new Promise<void>((resolve) => p.once("toolsChanged", () => resolve()));
    const staging = path.join(temp.path, "staging");
    await writeBackendManifests(staging);
    await rename(staging, manifests);
    await back;
    expect(p.tools().map((t) => t.tool.name)).toEqual(EXPOSED_TOOLS);
    const edited = new Promise<void>((resolve) => p.once("toolsChanged", () => resolve()));
    await rm(path.join(manifests, "misc.json"));
    await edited;
    expect(p.tools().map((t) => t.tool.name)).toEqual(["add", "say"]);
  });

  it("follows a config reload: deny applies in place, a new manifests folder reconnects", async () => {
    backend = await startJsonRpcBackend(socket);
    const p = await openPool();
    const connectionsBefore = backend.stats().connections;
    expect(await p.reconfigure([config({ deny: ["say"] })])).toMatchObject({ updated: ["svc"], changed: [] });
    expect(p.tools().map((t) => t.tool.name)).not.toContain("say");
    expect(await p.callTool("svc", "add", { a: 1, b: 1 })).toEqual({ content: [{ type: "text", text: "2" }] });
    expect(backend.stats().connections).toBe(connectionsBefore);

    const other = path.join(temp.path, "other");
    await rename(manifests, other);
    expect(await p.reconfigure([config({ manifests: other })])).toMatchObject({ changed: ["svc"] });
    expect(p.status("svc")).toMatchObject({ state: "ready" });
    expect(p.tools().map((t) => t.tool.name)).toEqual(EXPOSED_TOOLS);
  });

  it("a manifests folder that cannot be read fails the pool's start with CONFIG_INVALID naming the field", async () => {
    const error = await openPool({ manifests: path.join(temp.path, "missing") }).catch((err: unknown) => err);
    expect(isAbridgeError(error, "CONFIG_INVALID")).toBe(true);
    expect(messageOf(error)).toContain(`servers.svc.manifests: cannot read the manifests folder ${path.join(temp.path, "missing")} (ENOENT)`);
  });

  it("bad manifests are reported naming file and field while the others load", async () => {
    backend = await startJsonRpcBackend(socket);
    await writeFile(path.join(manifests, "broken.json"), "{ not json");
    await writeFile(
      path.join(manifests, "z-dup.json"),
      JSON.stringify({
        id: "dup",
        tools: [
          { name: "add", inputSchema: { type: "object" } },
          { description: "no name", inputSchema: {} },
          { name: "empty", inputSchema: {} },
        ],
        implementation: { methods: { add: "calc.add", empty: "" } },
      }),
    );
    const p = await openPool();
    expect(p.tools().map((t) => t.tool.name)).toEqual(EXPOSED_TOOLS);
    const status = p.status("svc")!;
    expect(status.state).toBe("ready");
    expect(status.error?.code).toBe("CONFIG_INVALID");
    const lines = status.error!.message.split("\n");
    expect(lines).toContain(
      `${path.join(manifests, "broken.json")}: expected JSON, got invalid JSON at line 1, column 3: expected a property name in double quotes`,
    );
    expect(lines).toContain(
      `${path.join(manifests, "z-dup.json")}: tools[0].name: "add" is already declared by ${path.join(manifests, "calc/manifest.json")}; this declaration is skipped`,
    );
    expect(lines).toContain(`${path.join(manifests, "z-dup.json")}: tools[1].name: expected a non-empty string, got nothing`);
    expect(lines).toContain(
      `${path.join(manifests, "z-dup.json")}: implementation.methods.empty: expected the name of a JSON-RPC method, got an empty string; the tool is not exposed`,
    );
    expect(await p.callTool("svc", "add", { a: 1, b: 2 })).toEqual({ content: [{ type: "text", text: "3" }] });
  });

  it("ends a connection whose line goes past the 16 MiB default without a newline: its calls fail with the limit, a new call works", async () => {
    backend = await startJsonRpcBackend(socket);
    // A minute per call: only the line bound, not a timeout, may end the endless answer.
    const p = await openPool({ timeout_ms: 60_000 });
    expect(await p.callTool("svc", "add", { a: 1, b: 1 })).toEqual({ content: [{ type: "text", text: "2" }] });
    const before = backend.stats().connections;
    // Pipelined on the same connection: the gate holds its answer, the endless answer follows.
    const held = p.callTool("svc", "gate_wait", { tag: "held" });
    const endless = p.callTool("svc", "endless", {});
    await expect(endless).rejects.toMatchObject({ code: "UPSTREAM_ERROR" });
    await expect(endless).rejects.toThrow(
      /data\.endless: the answer went over the 16777216-byte limit of a line \(\d+ bytes read\); dropped, and the connection to unix:.* closed/,
    );
    await expect(held).rejects.toMatchObject({ code: "UPSTREAM_UNAVAILABLE", retryable: true });
    await expect(held).rejects.toThrow(/closed during gate\.wait \(the backend sent a line over the 16777216-byte limit\)/);
    // The backend sees its streaming connection end, not abridge give up reading it.
    while (backend.stats().endlessClosed < 1) await new Promise((r) => setImmediate(r));
    expect(await p.callTool("svc", "say", { name: "after" })).toEqual({ content: [{ type: "text", text: "hello after" }] });
    expect(backend.stats().connections).toBeGreaterThan(before);
    expect(p.status("svc")?.state).toBe("ready");
  }, 120_000);
});
