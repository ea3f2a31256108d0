import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { MODES } from "../../src/config/schema.js";
import type { Bridge } from "../../src/core/bridge.js";
import { EXPOSED_TOOLS, startJsonRpcBackend, writeBackendManifests, type Backend } from "../fixtures/jsonRpcBackend.js";
import { settled, waitFor } from "../helpers/waitFor.js";
import { RawClient, startDaemon, testSetup } from "./daemonHarness.js";

/** Resolves once `server`'s status is `state` (now or at a later status change). */
function statusOf(bridge: Bridge, server: string, state: string): Promise<void> {
  const reached = new Promise<void>((resolve) => {
    if (bridge.status(server)?.state === state) return resolve();
    const stop = bridge.onStatus((status) => {
      if (status.name !== server || status.state !== state) return;
      stop();
      resolve();
    });
  });
  return settled(reached, { what: `${server} to be ${state}`, detail: () => `it is ${bridge.status(server)?.state}` });
}

const backends: Backend[] = [];
afterEach(async () => {
  await Promise.allSettled(backends.splice(0).map((b) => b.close()));
});

describe("the daemon in front of a JSON-RPC backend", () => {
  it("lists the manifests' tools in every mode and calls the backend, pipelined from many requests at once", async () => {
    const setup = await testSetup(`[servers.svc]\njsonrpc = "unix:svc.sock"\nmanifests = "manifests"\n`);
    await writeBackendManifests(path.join(setup.dir, "manifests"));
    const backend = await startJsonRpcBackend(path.join(setup.dir, "svc.sock"));
    backends.push(backend);
    const daemon = await startDaemon(setup);
    const client = await RawClient.connect(daemon.address);
    const token = daemon.token;

    for (const mode of MODES) {
      const list = await client.request({ op: "list_tools", mode, token });
      expect(list.ok, JSON.stringify(list)).toBe(true);
      const names = (list.tools as { server: string; name: string }[])
        .filter((t) => t.server === "svc")
        .map((t) => t.name)
        .sort();
      expect(names, mode).toEqual(EXPOSED_TOOLS);
    }

    for (const mode of MODES) {
      const sum = await client.request({ op: "call_tool", server: "svc", tool: "add", args: { a: 19, b: 23 }, mode, token });
      expect(sum, mode).toMatchObject({ ok: true, result: { content: [{ type: "text", text: "42" }] } });
    }

    const failed = await client.request({ op: "call_tool", server: "svc", tool: "fail", args: {}, token });
    expect(failed).toMatchObject({ ok: true, result: { isError: true, _meta: { "abridge/jsonrpc-error": { code: -32001, message: "quota exceeded" } } } });

    const crashed = await client.request({ op: "call_tool", server: "svc", tool: "crash", args: {}, token });
    expect(crashed).toMatchObject({ ok: false, error: { code: "UPSTREAM_UNAVAILABLE", retryable: true } });

    const invalid = await client.request({ op: "call_tool", server: "svc", tool: "add", args: { a: "x" }, mode: "compact", token });
    expect(invalid).toMatchObject({ ok: true, result: { isError: true } });
    expect(JSON.stringify(invalid.result)).toContain("not forwarded");

    const schema = await client.request({ op: "get_schema", server: "svc", tool: "add", token });
    expect(schema).toMatchObject({ ok: true, schema: { server: "svc", uri: "mcp://svc/add", inputSchema: { required: ["a", "b"] } } });

    // Many calls at once, answered out of order by the backend, each to its own caller.
    const tags = Array.from({ length: 16 }, (_, i) => `t${i}`);
    for (const [i, tag] of tags.entries()) client.send({ op: "call_tool", server: "svc", tool: "gate_wait", args: { tag }, token, id: i });
    await waitFor(() => (backend.stats().requests["gate.wait"] ?? 0) >= tags.length, { what: "every call waiting at the backend" });
    const opener = await RawClient.connect(daemon.address);
    expect(await opener.request({ op: "call_tool", server: "svc", tool: "gate_open", args: {}, token })).toMatchObject({ ok: true });
    const answers = await Promise.all(tags.map(() => client.next()));
    for (const answer of answers) {
      const id = answer!.id as number;
      expect(answer).toMatchObject({ ok: true, result: { structuredContent: { tag: tags[id] } } });
    }
    expect(backend.stats().gateOrder).toEqual([...tags].reverse());
  }, 60_000);

  it("serves the tools while the backend is down and refuses calls as UPSTREAM_UNAVAILABLE, retryable", async () => {
    const setup = await testSetup(`[servers.svc]\njsonrpc = "unix:svc.sock"\nmanifests = "manifests"\n`);
    await writeBackendManifests(path.join(setup.dir, "manifests"));
    const daemon = await startDaemon(setup);
    const client = await RawClient.connect(daemon.address);
    const token = daemon.token;
    const list = await client.request({ op: "list_tools", token });
    expect((list.tools as { server: string }[]).filter((t) => t.server === "svc")).toHaveLength(EXPOSED_TOOLS.length);
    const call = await client.request({ op: "call_tool", server: "svc", tool: "add", args: { a: 1, b: 2 }, token });
    expect(call).toMatchObject({ ok: false, error: { code: "UPSTREAM_UNAVAILABLE", retryable: true } });

    // Up now: the reconnect (when the backoff says) makes the server ready, and a call then reaches it.
    const backend = await startJsonRpcBackend(path.join(setup.dir, "svc.sock"));
    backends.push(backend);
    await statusOf(daemon.bridge, "svc", "ready");
    const answer = await client.request({ op: "call_tool", server: "svc", tool: "add", args: { a: 1, b: 2 }, token });
    expect(answer).toMatchObject({ ok: true, result: { content: [{ type: "text", text: "3" }] } });
  }, 60_000);
});
