/**
 * Calls over the bus, end to end: a real nats-server, `abridge bus` as a child process with real
 * fixture servers as upstreams, and the library's BusClient. The policy, argument validation,
 * output limits and audit of the core apply to bus calls as they do on `serve`.
 */
import { readFile } from "node:fs/promises";
import path from "node:path";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BusCallError, BusClient } from "../../src/index.js";
import { fixtureServerToml, pidsWithMarker, writeConfig } from "../helpers/cliHarness.js";
import { body, BusRig, collect, requestHeaders, type WorkerProcess } from "./busHarness.js";

let rig: BusRig;
let worker: WorkerProcess;
let client: BusClient;
let raw: NatsConnection;
let dir: string;
let marker: string;

beforeAll(async () => {
  rig = await BusRig.open("bus-calls");
  ({ raw, dir, marker } = rig);
  const config = await writeConfig(
    dir,
    [
      'mode = "compact"',
      'audit_log = "audit.jsonl"',
      'cache_dir = "cache"',
      'state_dir = "state"',
      fixtureServerToml("files", "annotatedServer.ts", ["--marker", marker], "read_only = true\nmax_output_bytes = 2000"),
      fixtureServerToml("echo", "echoServer.ts", ["--marker", marker]),
      fixtureServerToml("odd", "misbehavingServer.ts", ["--marker", marker]),
      // Allowed more output than a NATS message holds (1 MiB by default).
      fixtureServerToml("wide", "annotatedServer.ts", ["--marker", marker], "max_output_bytes = 4000000"),
    ].join("\n"),
  );
  worker = await rig.worker({ config, nats: rig.nats.url, agent: "alpha" });
  client = await rig.client();
}, 120_000);

afterAll(async () => {
  await rig?.close();
  expect(pidsWithMarker(marker)).toEqual([]);
});

function text(result: { content?: unknown[] | undefined }): string {
  return (result.content as { type: string; text?: string }[]).map((c) => c.text ?? "").join("\n");
}

async function callError(agent: string, tool: string, args: Record<string, unknown> = {}, timeoutMs?: number): Promise<BusCallError> {
  const error = await client.callTool(agent, tool, args, timeoutMs !== undefined ? { timeoutMs } : {}).then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(error).toBeInstanceOf(BusCallError);
  return error as BusCallError;
}

describe("abridge bus: calls through BusClient", () => {
  it("returns a tool's result, marked as untrusted output", async () => {
    const result = await client.callTool("alpha", "files_read_file", {});
    expect(text(result)).toBe("read_file done");
    expect(result.isError).toBeUndefined();
    expect(result._meta).toMatchObject({ "abridge/trust": "untrusted-tool-output", "abridge/server": "files" });
  });

  it("returns a tool error as a result with isError, not as a bus error", async () => {
    const result = await client.callTool("alpha", "files_read_path", { path: path.join(dir, "no-such-file") });
    expect(result.isError).toBe(true);
    expect(text(result)).toContain("cannot read: ENOENT");
  });

  it("answers an unknown tool with tool_not_found, not retryable, naming near names", async () => {
    const error = await callError("alpha", "echo_ech");
    expect(error).toMatchObject({ code: "BUS_CALL_FAILED", busCode: "tool_not_found", retryable: false, origin: "worker", worker: worker.id });
    expect(error.message).toContain("echo_echo");
  });

  it("checks arguments against the full schema in compact mode and does not forward a bad call", async () => {
    const result = await client.callTool("alpha", "echo_echo", { txt: "hi" });
    expect(result.isError).toBe(true);
    expect(text(result)).toMatch(/Invalid arguments for echo_echo: text is required/);
    expect(text(result)).toContain("The call was not forwarded");
  });

  it("answers arguments nested past the depth limit with invalid_arguments, not internal, and goes on", async () => {
    let deep: Record<string, unknown> = { leaf: true };
    for (let i = 0; i < 300; i++) deep = { d: deep };
    const error = await callError("alpha", "echo_echo", { text: "deep", extra: deep });
    expect(error).toMatchObject({ busCode: "invalid_arguments", retryable: false, origin: "worker" });
    expect(error.message).toContain("the limit is 256");
    expect(text(await client.callTool("alpha", "echo_echo", { text: "after" }))).toBe("after");
  });

  it("refuses a tool that read_only does not allow, naming the rule", async () => {
    const result = await client.callTool("alpha", "files_write_file", {});
    expect(result.isError).toBe(true);
    expect(text(result)).toMatch(/Refused by servers\.files\.read_only/);
    // The list the agent sees leaves it out too.
    const listed = await client.listTools("alpha");
    expect(listed.tools.map((t) => t.name)).toContain("files_read_file");
    expect(listed.tools.map((t) => t.name)).not.toContain("files_write_file");
  });

  it("cuts an output over the server's max_output_bytes, with the marker", async () => {
    const result = await client.callTool("alpha", "files_big", { bytes: 5000 });
    expect(text(result)).toContain("output cut");
    expect(JSON.stringify(result).length).toBeLessThan(5000);
  });

  it("answers too_large when a result does not fit in a NATS message, and goes on", async () => {
    const error = await callError("alpha", "wide_big", { bytes: 1_500_000 });
    expect(error).toMatchObject({ busCode: "too_large", retryable: false, origin: "worker" });
    expect(error.message).toContain("max_payload");
    expect(text(await client.callTool("alpha", "wide_big", { bytes: 10 }))).toBe("0".repeat(10));
  });

  it("passes an upstream's JSON-RPC error on as upstream_error", async () => {
    const error = await callError("alpha", "odd_fail", { code: -32001, message: "the upstream says no" });
    expect(error).toMatchObject({ busCode: "upstream_error", origin: "worker" });
    expect(error.message).toContain("the upstream says no");
  });

  it("audits every bus call under the client name bus", async () => {
    await client.callTool("alpha", "echo_echo", { text: "audited" });
    const lines = (await readFile(path.join(dir, "audit.jsonl"), "utf8"))
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const outcomes = lines.filter((l) => l.client === "bus").map((l) => `${String(l.server)}/${String(l.tool)}:${String(l.outcome)}`);
    expect(outcomes).toEqual(
      expect.arrayContaining(["files/read_file:ok", "files/read_path:tool_error", "echo/echo:invalid_arguments", "files/write_file:refused", "echo/echo:ok"]),
    );
    expect(lines.every((l) => l.client === "bus")).toBe(true);
  });

  it("fails at once with unavailable when no worker of the agent is on the bus (retryable)", async () => {
    // The agent's own subject has no subscriber: the NATS server says so at once, long before
    // the requester's timeout.
    const error = await callError("beta", "echo_echo", { text: "x" }, 60_000);
    expect(error).toMatchObject({ busCode: "unavailable", retryable: true, origin: "client" });
    expect(error.message).toContain("tool.invoke.mcp.beta");
  });

  it("on the shared subjects (sharedSubjects), serves calls and lists, and times out on its own for an agent without workers", async () => {
    const shared = await BusClient.connect({ nats: rig.nats.url, sharedSubjects: true });
    try {
      expect(text(await shared.callTool("alpha", "echo_echo", { text: "shared" }))).toBe("shared");
      expect((await shared.listTools("alpha")).tools.map((t) => t.name)).toContain("echo_echo");
      // alpha's worker hears the call to beta on the shared subject and leaves it: no no-responders status.
      const error = await shared.callTool("beta", "echo_echo", { text: "x" }, { timeoutMs: 500 }).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(error).toMatchObject({ busCode: "timeout", retryable: true, origin: "client" });
    } finally {
      await shared.close();
    }
  });

  it("refuses an agent name that is not one subject token before sending", async () => {
    await expect(client.callTool("a.b", "echo_echo", {})).rejects.toMatchObject({ code: "INPUT_INVALID" });
    await expect(client.listTools("refresh")).rejects.toMatchObject({ code: "INPUT_INVALID", message: expect.stringContaining("reserved") });
  });
});

describe("abridge bus: messages on the wire", () => {
  it("marks requests tool-request and answers tool-output, in both directions", async () => {
    const requests = await collect(raw, "tool.invoke.mcp.alpha");
    try {
      await client.callTool("alpha", "echo_echo", { text: "marked" }, { id: "marked-1" });
      const seen = await requests.next((m) => body(m).id === "marked-1", "the request on tool.invoke.mcp.alpha");
      expect(seen.headers?.get("Content-Trust")).toBe("tool-request");
      expect(body(seen)).toEqual({ id: "marked-1", agent: "alpha", tool: "echo_echo", arguments: { text: "marked" } });
    } finally {
      requests.stop();
    }
    const reply = await raw.request("tool.invoke.mcp", JSON.stringify({ id: 7, agent: "alpha", tool: "echo_echo", arguments: { text: "raw" } }), {
      timeout: 30_000,
      headers: requestHeaders(),
    });
    expect(reply.headers?.get("Content-Trust")).toBe("tool-output");
    expect(body(reply)).toMatchObject({
      id: 7,
      agent: "alpha",
      worker: worker.id,
      tool: "echo_echo",
      ok: true,
      result: { content: [{ type: "text", text: "raw" }] },
    });
  });

  it("publishes the answer to a call without a reply subject on tool.result.<agent>", async () => {
    const results = await collect(raw, "tool.result.alpha");
    try {
      raw.publish("tool.invoke.mcp", JSON.stringify({ id: "no-reply", agent: "alpha", tool: "echo_echo", arguments: { text: "published" } }), {
        headers: requestHeaders(),
      });
      const answer = await results.next((m) => body(m).id === "no-reply", "the result on tool.result.alpha");
      expect(answer.headers?.get("Content-Trust")).toBe("tool-output");
      expect(body(answer)).toMatchObject({ ok: true, result: { content: [{ type: "text", text: "published" }] } });
    } finally {
      results.stop();
    }
  });

  it("refuses a call on the agent's own subject that names another agent", async () => {
    const reply = await raw.request("tool.invoke.mcp.alpha", JSON.stringify({ id: "misnamed", agent: "beta", tool: "echo_echo", arguments: { text: "x" } }), {
      timeout: 30_000,
      headers: requestHeaders(),
    });
    expect(body(reply)).toMatchObject({ id: "misnamed", agent: "alpha", ok: false, error: { code: "bad_request", retryable: false } });
    expect((body(reply).error as { message: string }).message).toContain('names agent "beta" on tool.invoke.mcp.alpha');
  });

  it("leaves a call for another agent on the shared subject to that agent's workers", async () => {
    const results = await collect(raw, "tool.result.>");
    try {
      raw.publish("tool.invoke.mcp", JSON.stringify({ id: "other", agent: "gamma", tool: "echo_echo", arguments: { text: "x" } }), {
        headers: requestHeaders(),
      });
      // A call alpha's worker does answer, sent after it on the same connection (so it arrives
      // after it): once its answer is in, the first was passed over.
      await raw.request("tool.invoke.mcp", JSON.stringify({ id: "after", agent: "alpha", tool: "echo_echo", arguments: { text: "after" } }), {
        timeout: 30_000,
        headers: requestHeaders(),
      });
      await raw.flush();
      expect(results.messages.map((m) => body(m).id)).not.toContain("other");
    } finally {
      results.stop();
    }
  });
});
