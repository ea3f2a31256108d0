import { stat } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { readLock } from "../../../src/daemon/wire/lockfile.js";
import { MAX_LINE_BYTES } from "../../../src/daemon/wire/protocol.js";
import { memoryLogger } from "../../helpers/memoryLogger.js";
import { waitFor } from "../../helpers/waitFor.js";
import { RawClient, startDaemon, testSetup } from "../daemonHarness.js";

describe("daemon protocol", () => {
  it("answers list_tools, call_tool, get_schema, stats and refresh, echoing ids", async () => {
    const setup = await testSetup();
    const daemon = await startDaemon(setup);
    const lock = await readLock(daemon.lockFile);
    expect(lock.state === "ok" && lock.lock.address === daemon.address && lock.lock.token === daemon.token).toBe(true);
    expect((await stat(daemon.lockFile)).mode & 0o777).toBe(0o600);
    // A unix socket in the state dir (0700) by default, reachable by its owner only.
    expect(daemon.address).toBe(`unix:${path.resolve(setup.stateDir, "daemon.sock")}`);

    const client = await RawClient.connect(daemon.address);
    const token = daemon.token;
    const list = await client.request({ op: "list_tools", token, id: "L" });
    expect(list.id).toBe("L");
    expect(list.ok).toBe(true);
    const tools = list.tools as Record<string, unknown>[];
    const echo = tools.find((t) => t.server === "echo" && t.name === "echo");
    expect(echo).toMatchObject({ uri: "mcp://echo/echo", exposedName: "echo_echo", description: expect.stringContaining("text") });
    // compact (the default mode): parameters in a typed line, an open object schema, no property prose.
    expect(echo?.parameters).toEqual({ type: "object" });
    expect(echo?.description).toContain("(text: string)");
    expect(tools.map((t) => t.name)).not.toContain("get_schema");
    expect(tools).toHaveLength(5);

    const full = await client.request({ op: "list_tools", mode: "full", token });
    const fullEcho = (full.tools as Record<string, unknown>[]).find((t) => t.name === "echo");
    expect(fullEcho?.parameters).toMatchObject({ properties: { text: { description: "Text to echo" } } });

    const lazy = await client.request({ op: "list_tools", mode: "lazy", token });
    expect((lazy.tools as Record<string, unknown>[]).find((t) => t.name === "echo")?.parameters).toEqual({ type: "object" });

    const call = await client.request({ op: "call_tool", server: "echo", tool: "echo", args: { text: "hello" }, token, id: 7 });
    expect(call).toMatchObject({ id: 7, ok: true, result: { content: [{ type: "text", text: "hello" }] } });

    // Arguments are validated against the full schema; the error carries it.
    const invalid = await client.request({ op: "call_tool", server: "echo", tool: "add", args: { a: "x" }, token });
    expect(invalid.ok).toBe(true);
    expect(invalid.result).toMatchObject({ isError: true });
    expect(JSON.stringify(invalid.result)).toContain("not forwarded");

    const schema = await client.request({ op: "get_schema", server: "echo", tool: "add", token });
    expect(schema).toMatchObject({ ok: true, schema: { server: "echo", uri: "mcp://echo/add", outputSchema: { required: ["sum"] } } });

    const unknown = await client.request({ op: "call_tool", server: "echo", tool: "nope", token });
    expect(unknown).toMatchObject({ ok: false, error: { code: "TOOL_NOT_FOUND" } });
    const noServer = await client.request({ op: "get_schema", server: "ghost", tool: "x", token });
    expect(noServer).toMatchObject({ ok: false, error: { code: "TOOL_NOT_FOUND", retryable: false } });

    const stats = await client.request({ op: "stats", token });
    expect(stats.ok).toBe(true);
    const body = stats.stats as Record<string, unknown>;
    expect(body).toMatchObject({ pid: daemon.info.pid, address: daemon.address, catalog: { tools: 5 } });
    expect(typeof body.uptimeMs).toBe("number");
    expect(typeof body.queueDepth).toBe("number");
    expect((body.upstreams as { name: string; state: string }[]).map((u) => [u.name, u.state])).toEqual([
      ["echo", "ready"],
      ["slow", "ready"],
    ]);
    const tokens = body.tokens as { full: number; current: number; saved: number };
    // Negative here: on five tiny tools the compact list's get_schema costs more than it saves.
    expect(tokens.saved).toBe(tokens.full - tokens.current);
    expect(tokens.full).toBeGreaterThan(0);
    expect(body.timeoutsMs).toEqual({ echo: 30_000, slow: 30_000 });

    const refresh = await client.request({ op: "refresh", token });
    expect(refresh).toMatchObject({
      ok: true,
      discovery: [
        { server: "echo", tools: 4 },
        { server: "slow", tools: 1 },
      ],
    });
  });

  it("answers pipelined requests in order even when a later one finishes first", async () => {
    const setup = await testSetup();
    const daemon = await startDaemon(setup);
    const client = await RawClient.connect(daemon.address);
    const token = daemon.token;
    await client.request({ op: "list_tools", token }); // upstreams ready
    client.send(
      `${[
        { op: "call_tool", server: "slow", tool: "sleep", args: { ms: 600, steps: 1 }, token, id: 1 },
        { op: "stats", token, id: 2 },
        { op: "call_tool", server: "echo", tool: "echo", args: { text: "fast" }, token, id: 3 },
        { op: "bogus", token, id: 4 },
      ]
        .map((m) => JSON.stringify(m))
        .join("\n")}\n`,
    );
    const answers = [await client.next(), await client.next(), await client.next(), await client.next()];
    expect(answers.map((a) => a?.id)).toEqual([1, 2, 3, 4]);
    expect(answers.map((a) => a?.ok)).toEqual([true, true, true, false]);
  });

  it("answers bad requests with DAEMON_BAD_REQUEST and keeps the connection usable", async () => {
    const setup = await testSetup();
    const daemon = await startDaemon(setup);
    const client = await RawClient.connect(daemon.address);
    const token = daemon.token;
    const bad = [
      { op: "call_tool", token, id: 1 },
      { op: "call_tool", server: "echo", tool: "echo", arguments: { text: "x" }, token, id: 2 },
      { op: "list_tools", mode: "tiny", token, id: 3 },
      { token, id: 4 },
      { op: "call_tool", server: "echo", tool: "echo", args: [1], token, id: 5 },
    ];
    for (const request of bad) {
      const answer = await client.request(request);
      expect(answer).toMatchObject({ id: request.id, ok: false, error: { code: "DAEMON_BAD_REQUEST", retryable: false } });
    }
    expect(await client.request({ op: "call_tool", server: "echo", tool: "echo", args: { text: "kept" }, token })).toMatchObject({ ok: true });
    for (const notObject of ["[1,2]\n", "42\n"]) {
      const other = await RawClient.connect(daemon.address);
      other.send(notObject);
      // Not an object, so no token either: refused before it is looked at, and cut off.
      expect(await other.next()).toMatchObject({ ok: false, error: { code: "DAEMON_UNAUTHORIZED" } });
      await other.closed;
    }
    expect(await client.request({ op: "call_tool", server: "echo", tool: "echo", args: { text: "still" }, token })).toMatchObject({
      ok: true,
      result: { content: [{ text: "still" }] },
    });
  });

  it("refuses a wrong or missing token, logs it, and runs nothing", async () => {
    const setup = await testSetup();
    const { logger, lines } = memoryLogger();
    const daemon = await startDaemon(setup, { logger });
    const client = await RawClient.connect(daemon.address);
    await client.request({ op: "list_tools", token: daemon.token });
    const before = daemon.bridge.stats().calls.total;
    // Each refusal ends its connection, so each wrong token comes on a connection of its own.
    const refusedOn = async (request: Record<string, unknown>): Promise<Record<string, unknown>> => {
      const other = await RawClient.connect(daemon.address);
      const answer = await other.request(request);
      await other.closed;
      return answer;
    };
    for (const token of [undefined, "", "x".repeat(43), `${daemon.token}x`, daemon.token.toUpperCase() === daemon.token ? "y" : daemon.token.toUpperCase()]) {
      const answer = await refusedOn({
        op: "call_tool",
        server: "echo",
        tool: "echo",
        args: { text: "no" },
        id: "t",
        ...(token !== undefined ? { token } : {}),
      });
      expect(answer).toMatchObject({ id: "t", ok: false, error: { code: "DAEMON_UNAUTHORIZED" } });
    }
    expect(await refusedOn({ op: "shutdown", token: "nope" })).toMatchObject({ ok: false, error: { code: "DAEMON_UNAUTHORIZED" } });
    expect(daemon.bridge.stats().calls.total).toBe(before);
    // Rate-limited: one line for the burst, not one per refusal.
    expect(lines.filter((l) => l.includes("request refused"))).toHaveLength(1);
    expect(lines.join("\n")).not.toContain(daemon.token);
    // The daemon is still up and serving.
    expect(await client.request({ op: "stats", token: daemon.token })).toMatchObject({ ok: true, stats: { daemon: { refused: 6 } } });
  });

  it("closes only the connection that sends invalid JSON or a line over 16 MiB", async () => {
    const setup = await testSetup();
    const daemon = await startDaemon(setup);
    const token = daemon.token;
    const bystander = await RawClient.connect(daemon.address);
    await bystander.request({ op: "list_tools", token });

    const garbled = await RawClient.connect(daemon.address);
    garbled.send(`${JSON.stringify({ op: "stats", token, id: 1 })}\n{"op": oops\n${JSON.stringify({ op: "stats", token, id: 2 })}\n`);
    expect(await garbled.next()).toMatchObject({ id: 1, ok: true });
    expect(await garbled.next()).toMatchObject({ id: null, ok: false, error: { code: "DAEMON_BAD_REQUEST" } });
    expect(await garbled.next()).toBeUndefined();
    await garbled.closed;

    const huge = await RawClient.connect(daemon.address);
    const filler = "a".repeat(1024 * 1024);
    huge.send(`{"op":"stats","token":${JSON.stringify(token)},"pad":"`);
    for (let i = 0; i < 17; i++) huge.send(filler);
    expect(await huge.next()).toMatchObject({ ok: false, error: { code: "DAEMON_BAD_REQUEST", message: expect.stringContaining(String(MAX_LINE_BYTES)) } });
    await huge.closed;

    expect(await bystander.request({ op: "call_tool", server: "echo", tool: "echo", args: { text: "fine" }, token })).toMatchObject({ ok: true });
  });

  it("keeps a call in flight unaffected while other clients connect, disconnect and send garbage", async () => {
    const setup = await testSetup();
    const daemon = await startDaemon(setup);
    const token = daemon.token;
    const caller = await RawClient.connect(daemon.address);
    await caller.request({ op: "list_tools", token });
    caller.send({ op: "call_tool", server: "slow", tool: "sleep", args: { ms: 1_500, steps: 3 }, token, id: "long" });

    const others: Promise<unknown>[] = [];
    for (let i = 0; i < 5; i++) {
      others.push(
        (async () => {
          const quick = await RawClient.connect(daemon.address);
          await quick.request({ op: "stats", token });
          quick.close();
          const rude = await RawClient.connect(daemon.address);
          rude.send("\u0000\u0001 garbage that is not JSON\n");
          await rude.closed;
          const leaver = await RawClient.connect(daemon.address);
          leaver.send({ op: "call_tool", server: "slow", tool: "sleep", args: { ms: 5_000 }, token });
          leaver.close();
        })(),
      );
    }
    await Promise.all(others);
    expect(await caller.next()).toMatchObject({ id: "long", ok: true, result: { content: [{ type: "text" }] } });
    // The leavers' calls were aborted, the caller's was not.
    await waitFor(() => daemon.bridge.stats().calls.inFlight === 0, { what: "the leavers' calls to end" });
    expect(daemon.bridge.stats().calls).toMatchObject({ total: 6, failed: 5 });
  });

  it("aborts a client's calls when it disconnects, and the cancellation reaches the upstream", async () => {
    const setup = await testSetup();
    const { logger, lines, until } = memoryLogger();
    const daemon = await startDaemon(setup, { logger });
    const client = await RawClient.connect(daemon.address);
    await client.request({ op: "list_tools", token: daemon.token });
    client.send({ op: "call_tool", server: "slow", tool: "sleep", args: { ms: 20_000 }, token: daemon.token });
    // The call has reached the upstream (not merely abridge, where a call to a server still
    // starting waits, and one aborted there has nothing to cancel upstream).
    await until(() => lines.some((l) => l.includes("sleeping")), "the call at the upstream");
    expect(daemon.bridge.stats().calls.inFlight).toBe(1);
    client.close();
    // Well under the call's own 20 s: only the cancellation ends it this early.
    await waitFor(() => daemon.bridge.stats().calls.inFlight === 0, { what: "the call aborted", timeoutMs: 15_000 });
    await until(() => lines.some((l) => l.includes("cancelled")), "the upstream's cancellation line", 15_000);
  });

  it("exits after the idle timeout, removing its lockfile, but not while a call runs", async () => {
    const setup = await testSetup();
    // Long enough for the client to connect on a loaded machine before the daemon goes idle (with
    // 400 ms a busy machine let it go idle first and the connect was reset); the call is longer.
    const daemon = await startDaemon(setup, { idleTimeoutMs: 2_000 });
    const client = await RawClient.connect(daemon.address);
    const answer = await client.request({ op: "call_tool", server: "slow", tool: "sleep", args: { ms: 5_000, steps: 1 }, token: daemon.token });
    // The call took two and a half idle timeouts; the daemon waited for it.
    expect(answer.ok).toBe(true);
    expect(await daemon.closed).toBe("idle");
    expect((await readLock(daemon.lockFile)).state).toBe("missing");
    expect(await client.next()).toBeUndefined();
  });

  it("stops on shutdown after answering it", async () => {
    const setup = await testSetup();
    const daemon = await startDaemon(setup);
    const client = await RawClient.connect(daemon.address);
    expect(await client.request({ op: "shutdown", token: daemon.token, id: 9 })).toEqual({ id: 9, ok: true });
    expect(await daemon.closed).toBe("shutdown");
    expect((await readLock(daemon.lockFile)).state).toBe("missing");
  });

  it("lets calls in flight finish on close, within the grace time", async () => {
    const setup = await testSetup();
    const daemon = await startDaemon(setup);
    const client = await RawClient.connect(daemon.address);
    await client.request({ op: "list_tools", token: daemon.token });
    client.send({ op: "call_tool", server: "slow", tool: "sleep", args: { ms: 800, steps: 1 }, token: daemon.token, id: "a" });
    await waitFor(() => daemon.bridge.stats().calls.inFlight === 1, { what: "the call in flight" });
    const closing = daemon.close({ graceMs: 20_000 });
    expect(await client.next()).toMatchObject({ id: "a", ok: true });
    await closing;

    const setup2 = await testSetup();
    const daemon2 = await startDaemon(setup2);
    const client2 = await RawClient.connect(daemon2.address);
    await client2.request({ op: "list_tools", token: daemon2.token });
    client2.send({ op: "call_tool", server: "slow", tool: "sleep", args: { ms: 30_000 }, token: daemon2.token, id: "b" });
    await waitFor(() => daemon2.bridge.stats().calls.inFlight === 1, { what: "the call in flight" });
    await daemon2.close({ graceMs: 200 });
    expect(await client2.next()).toMatchObject({ id: "b", ok: false, error: { code: "CANCELLED" } });
  });

  it("listens on a unix socket with --socket", async () => {
    const setup = await testSetup();
    const socketPath = path.join(setup.dir, "abridge.sock");
    const daemon = await startDaemon(setup, { socketPath });
    expect(daemon.address).toBe(`unix:${socketPath}`);
    const client = await RawClient.connect(daemon.address);
    expect(await client.request({ op: "call_tool", server: "echo", tool: "echo", args: { text: "sock" }, token: daemon.token })).toMatchObject({
      ok: true,
    });
    client.close();
    await daemon.close();
    await expect(stat(socketPath)).rejects.toThrow();
  });

  it("does not start a second daemon on a state dir that has a live one", async () => {
    const setup = await testSetup();
    const daemon = await startDaemon(setup);
    const { Daemon } = await import("../../../src/daemon/server/daemon.js");
    const results = await Promise.all(
      Array.from({ length: 5 }, () => Daemon.start({ config: setup.config, stateDir: setup.stateDir, cacheFile: path.join(setup.dir, "c.jsonl"), env: {} })),
    );
    for (const result of results) expect(result).toEqual({ status: "running", holder: daemon.info });
  });
});
