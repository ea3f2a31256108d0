import { spawn, type ChildProcess } from "node:child_process";
import { readFile } from "node:fs/promises";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { fixtureServerToml, pidsWithMarker, TEST_STARTUP_GRACE, writeConfig } from "../helpers/cliHarness.js";
import { stdioLegacyTranscript } from "../helpers/legacyTranscript.js";
import { BIN } from "../helpers/serveHarness.js";
import { REVISION, statelessMeta } from "../helpers/statelessClient.js";
import { Watch } from "../helpers/waitFor.js";
import { useTempDir } from "../helpers/tempDir.js";

const GOLDEN = new URL("../fixtures/legacyTranscript.json", import.meta.url);

/** `abridge serve` over stdio, spoken to line by line. */
function serveStdio(config: string): { child: ChildProcess; exited: Promise<unknown> } {
  const child = spawn(process.execPath, ["--import", "tsx", BIN, "serve", "--config", config], { stdio: ["pipe", "pipe", "ignore"] });
  return { child, exited: new Promise((resolve) => child.once("exit", resolve)) };
}

/** Reads answer lines of `child` by id. */
function answers(child: ChildProcess): {
  send(message: object): void;
  answer(id: number): Promise<Record<string, unknown>>;
  until(condition: () => boolean, what: string): Promise<void>;
  lines: string[];
} {
  const lines: string[] = [];
  let buffer = "";
  const arrived = new Watch();
  child.stdout!.setEncoding("utf8");
  child.stdout!.on("data", (chunk: string) => {
    buffer += chunk;
    let newline: number;
    while ((newline = buffer.indexOf("\n")) !== -1) {
      lines.push(buffer.slice(0, newline));
      buffer = buffer.slice(newline + 1);
    }
    arrived.changed();
  });
  const parsed = (): Record<string, unknown>[] => lines.map((line) => JSON.parse(line) as Record<string, unknown>);
  return {
    lines,
    send: (message) => child.stdin!.write(`${JSON.stringify(message)}\n`),
    until: (condition, what) => arrived.until(condition, { what }),
    async answer(id) {
      await arrived.until(() => parsed().some((m) => m.id === id), { what: `the answer to request ${id}` });
      return parsed().find((m) => m.id === id)!;
    },
  };
}

describe("abridge serve over stdio speaks both eras", () => {
  const temp = useTempDir({ marker: "dual-stdio" });
  let config: string;
  let running: { child: ChildProcess; exited: Promise<unknown> } | undefined;
  beforeEach(async () => {
    config = await writeConfig(
      temp.path,
      [`cache_dir = "cache"`, TEST_STARTUP_GRACE, fixtureServerToml("echo", "echoServer.ts", ["--tools", "2", "--name", temp.marker])].join("\n"),
    );
  });
  afterEach(async () => {
    if (running !== undefined) {
      running.child.stdin?.end();
      await running.exited;
    }
    running = undefined;
    expect(pidsWithMarker(temp.marker)).toEqual([]);
  });

  it("answers a client of the handshake era byte for byte as before revision 2026-07-28", async () => {
    running = serveStdio(config);
    const golden = JSON.parse(await readFile(GOLDEN, "utf8")) as { stdio: string[] };
    expect(await stdioLegacyTranscript(running.child)).toEqual(golden.stdio);
  });

  it("answers server/discover as the first line, then lists and calls without initialize", async () => {
    running = serveStdio(config);
    const client = answers(running.child);
    client.send({ jsonrpc: "2.0", id: 1, method: "server/discover", params: { _meta: statelessMeta() } });
    const discover = await client.answer(1);
    expect(discover.result).toMatchObject({ resultType: "complete", capabilities: { tools: { listChanged: true } } });
    expect((discover.result as { supportedVersions: string[] }).supportedVersions).toContain(REVISION);

    client.send({ jsonrpc: "2.0", id: 2, method: "tools/list", params: { _meta: statelessMeta() } });
    const list = (await client.answer(2)).result as { tools: { name: string }[]; ttlMs: number; cacheScope: string; resultType: string };
    expect(list.tools.map((t) => t.name)).toEqual(["echo_add", "echo_echo", "echo_tool_001", "echo_tool_002", "get_schema"]);
    expect(list).toMatchObject({ resultType: "complete", cacheScope: "public" });
    expect(list.ttlMs).toBeGreaterThanOrEqual(0);

    client.send({ jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "echo_echo", arguments: { text: "over stdio" }, _meta: statelessMeta() } });
    expect((await client.answer(3)).result).toMatchObject({ resultType: "complete", content: [{ type: "text", text: "over stdio" }] });

    // A version abridge does not serve without a session: -32022, listing those it does.
    client.send({
      jsonrpc: "2.0",
      id: 4,
      method: "tools/list",
      params: { _meta: statelessMeta({}, { "io.modelcontextprotocol/protocolVersion": "2099-01-01" }) },
    });
    const refused = (await client.answer(4)).error as { code: number; data: { supported: string[]; requested: string } };
    expect(refused.code).toBe(-32022);
    expect(refused.data).toMatchObject({ requested: "2099-01-01" });
    expect(refused.data.supported).toEqual(expect.arrayContaining([REVISION, "2025-11-25"]));

    // The revision removed initialize: a 2026-07-28 request for it is refused; no session began.
    client.send({ jsonrpc: "2.0", id: 5, method: "initialize", params: { _meta: statelessMeta() } });
    expect((await client.answer(5)).error).toMatchObject({ code: -32601 });
    client.send({ jsonrpc: "2.0", id: 6, method: "server/discover", params: {} });
    expect((await client.answer(6)).error).toMatchObject({ code: -32602 });
    // Every line was an answer to a request: nothing unasked went out.
    expect(client.lines).toHaveLength(6);
  });

  it("carries list changes on subscriptions/listen until the client cancels it", async () => {
    const conformance = await writeConfig(
      temp.path,
      [`cache_dir = "cache2"`, 'mode = "full"', TEST_STARTUP_GRACE, fixtureServerToml("c", "conformanceServer.ts", [temp.marker], "prefix = false")].join("\n"),
    );
    running = serveStdio(conformance);
    const client = answers(running.child);
    const frames = (subscription: string): Record<string, unknown>[] =>
      client.lines
        .map((line) => JSON.parse(line) as Record<string, unknown>)
        .filter(
          (m) =>
            m.id === undefined &&
            (m.params as { _meta?: Record<string, unknown> } | undefined)?._meta?.["io.modelcontextprotocol/subscriptionId"] === subscription,
        );
    const changed = (subscription: string): number => frames(subscription).filter((f) => f.method === "notifications/tools/list_changed").length;
    client.send({ jsonrpc: "2.0", id: 1, method: "tools/list", params: { _meta: statelessMeta() } });
    await client.answer(1);
    client.send({ jsonrpc: "2.0", id: "one", method: "subscriptions/listen", params: { notifications: { toolsListChanged: true }, _meta: statelessMeta() } });
    client.send({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "test_trigger_tool_change", arguments: {}, _meta: statelessMeta() } });
    await client.until(() => changed("one") === 1, "tools/list_changed on the listen stream");
    expect(frames("one")[0]).toEqual({
      jsonrpc: "2.0",
      method: "notifications/subscriptions/acknowledged",
      params: { notifications: { toolsListChanged: true }, _meta: { "io.modelcontextprotocol/subscriptionId": "one" } },
    });

    // Cancelled, the stream carries nothing more. A second stream opened now is the barrier: the
    // change that reaches it is the one the first would have carried.
    client.send({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: "one" } });
    client.send({ jsonrpc: "2.0", id: "two", method: "subscriptions/listen", params: { notifications: { toolsListChanged: true }, _meta: statelessMeta() } });
    await client.until(() => frames("two").length === 1, "the second stream's acknowledgement");
    client.send({ jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "test_trigger_tool_change", arguments: {}, _meta: statelessMeta() } });
    await client.until(() => changed("two") === 1, "tools/list_changed on the second stream");
    expect(changed("one")).toBe(1);
  });
});
