/**
 * Connections switched to unordered answers (`options`) and calls cancelled by id (`cancel`): what
 * lets a client carry many calls on one connection without a slow call holding up the rest, and
 * give up on one call without ending the others. Connections that did not ask keep request order.
 */
import { describe, expect, it } from "vitest";
import { DaemonClient } from "../../src/daemon/client/daemonClient.js";
import { AbridgeError } from "../../src/model/errors.js";
import { waitFor } from "../helpers/waitFor.js";
import { RawClient, startDaemon, testSetup } from "./daemonHarness.js";

describe("unordered connections", () => {
  it("answer a fast call before a slow one sent first, and cancel the slow one by id", async () => {
    const setup = await testSetup();
    const daemon = await startDaemon(setup);
    const token = daemon.token;
    const client = await RawClient.connect(daemon.address);
    client.send({ token, op: "options", unordered: true, id: "o" });
    expect(await client.next()).toEqual({ id: "o", ok: true });
    client.send({ token, op: "call_tool", id: "slow", server: "slow", tool: "sleep", args: { ms: 30_000 } });
    await waitFor(() => daemon.bridge.stats().calls.inFlight === 1, { what: "the slow call at the upstream" });
    client.send({ token, op: "call_tool", id: "fast", server: "echo", tool: "echo", args: { text: "first" } });
    expect(await client.next()).toMatchObject({ id: "fast", ok: true, result: { content: [{ text: "first" }] } });

    client.send({ token, op: "cancel", id: "c1", target: "nobody" });
    expect(await client.next()).toEqual({ id: "c1", ok: true, cancelled: false });
    client.send({ token, op: "cancel", id: "c2", target: "slow" });
    const answers = [await client.next(), await client.next()];
    expect(answers).toContainEqual({ id: "c2", ok: true, cancelled: true });
    expect(answers).toContainEqual(expect.objectContaining({ id: "slow", ok: false, error: expect.objectContaining({ code: "CANCELLED" }) }));
    await waitFor(() => daemon.bridge.stats().calls.inFlight === 0, { what: "the upstream call to end" });
    // The connection carries on.
    expect(await client.request({ token, op: "call_tool", id: 9, server: "echo", tool: "echo", args: { text: "after" } })).toMatchObject({ id: 9, ok: true });
  });

  it("abort every call in flight when the client goes away", async () => {
    const setup = await testSetup();
    const daemon = await startDaemon(setup);
    const token = daemon.token;
    const client = await RawClient.connect(daemon.address);
    client.send({ token, op: "options", unordered: true, id: 0 });
    for (const id of [1, 2]) client.send({ token, op: "call_tool", id, server: "slow", tool: "sleep", args: { ms: 30_000 } });
    await waitFor(() => daemon.bridge.stats().calls.inFlight === 2, { what: "both calls at the upstream" });
    client.close();
    await waitFor(() => daemon.bridge.stats().calls.inFlight === 0, { what: "both calls cancelled" });
  });

  it("reject a malformed options or cancel request with DAEMON_BAD_REQUEST", async () => {
    const setup = await testSetup();
    const daemon = await startDaemon(setup);
    const token = daemon.token;
    const client = await RawClient.connect(daemon.address);
    for (const bad of [
      { token, op: "options", id: 1 },
      { token, op: "options", unordered: "yes", id: 2 },
      { token, op: "cancel", id: 3 },
      { token, op: "cancel", target: { id: 1 }, id: 4 },
    ]) {
      expect(await client.request(bad)).toMatchObject({ id: bad.id, ok: false, error: { code: "DAEMON_BAD_REQUEST" } });
    }
  });
});

describe("ordered connections (the default)", () => {
  it("still answer in request order: a fast call waits for the slow one before it", async () => {
    const setup = await testSetup();
    const daemon = await startDaemon(setup);
    const token = daemon.token;
    const client = await RawClient.connect(daemon.address);
    client.send({ token, op: "call_tool", id: "slow", server: "slow", tool: "sleep", args: { ms: 1_500, steps: 1 } });
    client.send({ token, op: "call_tool", id: "fast", server: "echo", tool: "echo", args: { text: "second" } });
    expect(await client.next()).toMatchObject({ id: "slow", ok: true });
    expect(await client.next()).toMatchObject({ id: "fast", ok: true });
  });
});

describe("the client's shared call connections", () => {
  it("finish fast calls while a slow one runs, and cancel the slow one alone on abort", async () => {
    const setup = await testSetup();
    const daemon = await startDaemon(setup);
    const client = new DaemonClient({ stateDir: setup.stateDir });
    try {
      await client.listTools();
      const controller = new AbortController();
      const slow = client.callTool("slow", "sleep", { ms: 30_000 }, { signal: controller.signal });
      await waitFor(() => daemon.bridge.stats().calls.inFlight === 1, { what: "the slow call at the upstream" });
      const texts = Array.from({ length: 40 }, (_, i) => `fast ${i}`);
      const fast = await Promise.all(texts.map((text) => client.callTool("echo", "echo", { text })));
      expect(fast.map((r) => (r.content?.[0] as { text?: string } | undefined)?.text)).toEqual(texts);
      controller.abort();
      const error = await slow.then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(error).toBeInstanceOf(AbridgeError);
      expect((error as AbridgeError).code).toBe("CANCELLED");
      await waitFor(() => daemon.bridge.stats().calls.inFlight === 0, { what: "the slow call cancelled at the daemon" });
      // Calls share a few connections: 41 calls did not open 41 (the read-only requests have one more).
      const stats = await client.stats();
      expect(stats.daemon.connections).toBeLessThanOrEqual(5);
      expect(await client.callTool("echo", "echo", { text: "after" })).toMatchObject({ content: [{ text: "after" }] });
    } finally {
      client.close();
    }
  });
});
