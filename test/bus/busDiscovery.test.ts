/**
 * Tool discovery on the bus: the worker publishes its tool list on tool.meta.mcp.<agent> when it
 * starts, when asked on tool.meta.mcp.refresh, when an upstream's list changes and when the config
 * file is edited. Real nats-server, `abridge bus` as a child process, real fixture servers.
 */
import { writeFile } from "node:fs/promises";
import type { Msg, NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { BusClient } from "../../src/index.js";
import { fixtureServerToml, writeConfig } from "../helpers/cliHarness.js";
import { body, BusRig, collect, requestHeaders, type Collector, type WorkerProcess } from "./busHarness.js";

let rig: BusRig;
let worker: WorkerProcess;
let client: BusClient;
let raw: NatsConnection;
let lists: Collector;
let configFile: string;
let baseToml: string;
let marker: string;

beforeAll(async () => {
  rig = await BusRig.open("bus-discovery");
  ({ raw, marker } = rig);
  baseToml = [
    'mode = "full"',
    'cache_dir = "cache"',
    fixtureServerToml("dyn", "listChangedServer.ts", ["--marker", marker]),
    fixtureServerToml("echo", "echoServer.ts", ["--marker", marker, "--tools", "1"]),
  ].join("\n");
  configFile = await writeConfig(rig.dir, baseToml);
  // Listening before the worker starts, so the list it publishes at start is heard.
  lists = await collect(raw, "tool.meta.mcp.alpha");
  worker = await rig.worker({ config: configFile, nats: rig.nats.url, agent: "alpha" });
  client = await rig.client();
}, 120_000);

afterAll(async () => rig?.close());

function names(msg: Msg): string[] {
  return (body(msg).tools as { name: string }[]).map((t) => t.name).sort();
}

describe("abridge bus: tool discovery", () => {
  it("publishes the tool list at start, marked as untrusted output", async () => {
    const start = await lists.next((m) => body(m).reason === "start", "the list published at start");
    expect(start.headers?.get("Content-Trust")).toBe("tool-output");
    expect(body(start)).toMatchObject({ agent: "alpha", worker: worker.id, mode: "full", digest: expect.any(String) });
    expect(names(start)).toEqual(["dyn_add_tool", "echo_add", "echo_echo", "echo_tool_001"]);
    const echo = (body(start).tools as { name: string; inputSchema: unknown }[]).find((t) => t.name === "echo_echo");
    expect(echo?.inputSchema).toMatchObject({ required: ["text"] });
  });

  it("re-lists on a refresh request, answers it and publishes the list for everyone", async () => {
    // A tool added without a list_changed notification: only a re-list can find it.
    await client.callTool("alpha", "dyn_add_tool", { name: "quiet", burst: 0 });
    expect((await client.listTools("alpha")).tools.map((t) => t.name)).not.toContain("dyn_quiet");
    const reply = await raw.request("tool.meta.mcp.refresh", JSON.stringify({ agent: "alpha", id: "r1" }), { timeout: 30_000, headers: requestHeaders() });
    expect(reply.headers?.get("Content-Trust")).toBe("tool-output");
    expect(body(reply)).toMatchObject({ reason: "refresh", id: "r1", agent: "alpha", worker: worker.id });
    expect(names(reply)).toContain("dyn_quiet");
    const published = await lists.next((m) => body(m).id === "r1", "the refreshed list on tool.meta.mcp.alpha");
    expect(names(published)).toEqual(names(reply));
  });

  it("answers a refresh with an empty body (every agent), and BusClient's refresh", async () => {
    const reply = await raw.request("tool.meta.mcp.refresh", "", { timeout: 30_000, headers: requestHeaders() });
    expect(body(reply)).toMatchObject({ reason: "refresh", agent: "alpha" });
    const listed = await client.listTools("alpha", { refresh: true });
    expect(listed).toMatchObject({ reason: "refresh", agent: "alpha", mode: "full" });
    expect(listed.tools.map((t) => t.name)).toContain("dyn_quiet");
  });

  it("leaves a refresh for another agent unanswered", async () => {
    await expect(raw.request("tool.meta.mcp.refresh", JSON.stringify({ agent: "beta" }), { timeout: 700, headers: requestHeaders() })).rejects.toMatchObject({
      name: "TimeoutError",
    });
  });

  it("refuses a refresh request without the trust header", async () => {
    const reply = await raw.request("tool.meta.mcp.refresh", JSON.stringify({ agent: "alpha", id: "bare" }), { timeout: 30_000 });
    expect(body(reply)).toMatchObject({ ok: false, id: "bare", error: { code: "bad_request", retryable: false } });
    expect((body(reply).error as { message: string }).message).toContain("Content-Trust: tool-request");
  });

  it("publishes again when an upstream's list changes", async () => {
    await client.callTool("alpha", "dyn_add_tool", { name: "loud" });
    const changed = await lists.next((m) => body(m).reason === "list_changed" && names(m).includes("dyn_loud"), "the changed list");
    expect(changed.headers?.get("Content-Trust")).toBe("tool-output");
  });

  it("publishes the new list when the config file is edited", async () => {
    await writeFile(configFile, `startup_grace_ms = 30000\n${baseToml}\n${fixtureServerToml("more", "echoServer.ts", ["--marker", marker, "--tools", "0"])}`);
    const edited = await lists.next((m) => body(m).reason === "config" && names(m).includes("more_echo"), "the list after the edit");
    expect(names(edited)).toEqual(expect.arrayContaining(["more_add", "more_echo", "echo_echo", "dyn_add_tool"]));
    // And the new server's tools are served.
    expect(await client.callTool("alpha", "more_echo", { text: "new" })).toMatchObject({ content: [{ type: "text", text: "new" }] });
  });
});
