import { afterEach, describe, expect, it } from "vitest";
import { DaemonClient, isMcpPath } from "../../../src/daemon/client/daemonClient.js";
import { waitFor } from "../../helpers/waitFor.js";
import { startDaemon, testSetup } from "../daemonHarness.js";
import { rejection } from "../../helpers/rejection.js";

const clients: DaemonClient[] = [];
function client(stateDir: string, options: Partial<ConstructorParameters<typeof DaemonClient>[0]> = {}): DaemonClient {
  const c = new DaemonClient({ stateDir, ...options });
  clients.push(c);
  return c;
}

afterEach(() => {
  for (const c of clients.splice(0)) c.close();
});

describe("DaemonClient", () => {
  it("lists, calls, fetches schemas and stats through the lockfile", async () => {
    const setup = await testSetup();
    const daemon = await startDaemon(setup);
    const c = client(setup.stateDir);
    expect((await c.connect()).pid).toBe(daemon.info.pid);
    const tools = await c.listTools();
    expect(tools.map((t) => `${t.server}/${t.name}`)).toEqual(["echo/add", "echo/echo", "echo/tool_001", "echo/tool_002", "slow/sleep"]);
    const [listed, called, schema, stats] = await Promise.all([
      c.listTools({ mode: "summary" }),
      c.callTool("echo", "echo", { text: "hi" }),
      c.getSchema("echo", "echo"),
      c.stats(),
    ]);
    expect(listed).toHaveLength(5);
    expect(called).toMatchObject({ content: [{ type: "text", text: "hi" }] });
    expect(schema.inputSchema).toMatchObject({ properties: { text: { description: "Text to echo" } } });
    expect(stats).toMatchObject({ pid: daemon.info.pid, catalog: { tools: 5 } });
  });

  it("throws the daemon's error codes as AbridgeErrors", async () => {
    const setup = await testSetup();
    await startDaemon(setup);
    const c = client(setup.stateDir);
    const notFound = await rejection(c.callTool("echo", "missing"));
    expect(notFound.code).toBe("TOOL_NOT_FOUND");
    expect((await rejection(c.callTool("ghost", "x"))).code).toBe("SERVER_NOT_FOUND");
    expect((await rejection(c.getSchema("echo", "missing"))).code).toBe("TOOL_NOT_FOUND");
    // The daemon's own timeout arrives before the client's, which waits a margin longer.
    const timeout = await rejection(c.callTool("slow", "sleep", { ms: 10_000 }, { timeoutMs: 300 }));
    expect(timeout.code).toBe("UPSTREAM_TIMEOUT");
  });

  it("keeps host paths: loadTools gives mcp:// paths and executeTool routes them", async () => {
    const setup = await testSetup();
    await startDaemon(setup);
    const c = client(setup.stateDir);
    const tools = await c.loadTools();
    const echo = tools.find((t) => t.name === "echo");
    expect(echo?.path).toBe("mcp://echo/echo");
    expect(tools.every((t) => isMcpPath(t.path))).toBe(true);
    expect(await c.executeTool(echo!, { text: "routed" })).toMatchObject({ content: [{ text: "routed" }] });
    expect(await c.executeTool("mcp://echo/add", { a: 1, b: 2 })).toMatchObject({ structuredContent: { sum: 3 } });
    expect((await rejection(c.executeTool({ path: "local/grep" }, {}))).code).toBe("TOOL_NOT_FOUND");
    expect(isMcpPath("file:///x")).toBe(false);
  });

  it("aborts a call when its signal aborts, and the daemon stops the upstream call", async () => {
    const setup = await testSetup();
    const daemon = await startDaemon(setup);
    const c = client(setup.stateDir);
    await c.listTools();
    const controller = new AbortController();
    const call = c.callTool("slow", "sleep", { ms: 30_000 }, { signal: controller.signal });
    await waitFor(() => daemon.bridge.stats().calls.inFlight > 0, { what: "the call at the daemon" });
    controller.abort();
    expect((await rejection(call)).code).toBe("CANCELLED");
    await waitFor(() => daemon.bridge.stats().calls.inFlight === 0, { what: "the upstream call to end" });
    // Other requests of the same client are unaffected.
    expect(await c.callTool("echo", "echo", { text: "after" })).toMatchObject({ content: [{ text: "after" }] });
  });

  it("reconnects once when the daemon restarted, and says so when none runs", async () => {
    const setup = await testSetup();
    const first = await startDaemon(setup);
    const c = client(setup.stateDir);
    await c.listTools();
    await first.close();
    expect((await rejection(c.stats())).code).toBe("DAEMON_UNAVAILABLE");
    const second = await startDaemon(setup);
    expect(second.token).not.toBe(first.token);
    expect(await c.stats()).toMatchObject({ pid: second.info.pid, address: second.address });
    expect(await c.callTool("echo", "echo", { text: "again" })).toMatchObject({ content: [{ text: "again" }] });
  });
});
