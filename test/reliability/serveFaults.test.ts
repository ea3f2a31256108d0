/**
 * Client-side faults against a real `abridge serve` child: malformed JSON-RPC, requests that are
 * not JSON-RPC, unknown methods and bad params (each with its JSON-RPC code, the server serving on),
 * a large line, a line over the request bound, and a client that cancels or disconnects mid-call over stdio (the upstream call is
 * cancelled, no process is left).
 */
import { spawn } from "node:child_process";
import type { ChildProcessWithoutNullStreams } from "node:child_process";
import { once } from "node:events";
import { createInterface } from "node:readline";
import { describe, expect, it } from "vitest";
import { fixtureServerToml, pidsWithMarker, tempDir, writeConfig } from "../helpers/cliHarness.js";
import { BIN, serveOverStdio } from "../helpers/serveHarness.js";
import type { ServeSession } from "../helpers/serveHarness.js";
import { cleanUpMarkedProcesses } from "../helpers/markedProcesses.js";
import { Watch, waitFor } from "../helpers/waitFor.js";

const { cleanups, markers } = cleanUpMarkedProcesses();

/** A config dir with the echo and slow fixtures, each tagged with a unique marker argument. */
async function setup(): Promise<{ config: string; marker: string }> {
  const { dir, cleanup } = await tempDir();
  cleanups.push(cleanup);
  const marker = `--fault-marker-${process.pid}-${Date.now()}-${Math.random().toString(36).slice(2)}`;
  markers.push(marker);
  const toml = [
    'mode = "full"',
    `cache_dir = ${JSON.stringify(`${dir}/cache`)}`,
    fixtureServerToml("echo", "echoServer.ts", [marker]),
    // A long timeout, so a cancellation the upstream sees comes from the client, not the timeout.
    fixtureServerToml("slow", "slowServer.ts", [marker], "timeout_ms = 300000"),
  ].join("\n");
  return { config: await writeConfig(dir, toml), marker };
}

/** `abridge serve` over stdio, spoken to in raw lines. */
function rawServe(config: string): {
  child: ChildProcessWithoutNullStreams;
  send(line: string): void;
  answer(id: number | null, index?: number): Promise<Record<string, unknown>>;
  /** Sends `initialize` with id 0 and returns its answer. */
  initialize(): Promise<Record<string, unknown>>;
} {
  const child = spawn(process.execPath, ["--import", "tsx", BIN, "serve", "--config", config], {
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "" },
    stdio: ["pipe", "pipe", "pipe"],
  });
  cleanups.push(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.stdin.end();
      const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
      await once(child, "exit");
      clearTimeout(timer);
    }
  });
  child.stderr.resume();
  const messages: Record<string, unknown>[] = [];
  const read = new Watch();
  createInterface({ input: child.stdout }).on("line", (line) => {
    messages.push(JSON.parse(line) as Record<string, unknown>);
    read.changed();
  });
  return {
    child,
    send: (line) => child.stdin.write(`${line}\n`),
    async answer(id, index = 0) {
      let found: Record<string, unknown> | undefined;
      await read.until(() => (found = messages.filter((m) => m.id === id)[index]) !== undefined, { what: `an answer with id ${id}` });
      return found!;
    },
    initialize() {
      this.send(
        JSON.stringify({
          jsonrpc: "2.0",
          id: 0,
          method: "initialize",
          params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
        }),
      );
      return this.answer(0);
    },
  };
}

describe("abridge serve under client faults", () => {
  it("malformed JSON-RPC, unknown methods, bad params and large lines get their codes; serving goes on", async () => {
    const { config } = await setup();
    const serve = rawServe(config);
    expect(await serve.initialize()).toHaveProperty("result.serverInfo.name", "abridge");
    serve.send(JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }));
    serve.send("{not json");
    expect(await serve.answer(null, 0)).toMatchObject({ error: { code: -32700 } });
    serve.send('{"foo":1}');
    expect(await serve.answer(null, 1)).toMatchObject({ error: { code: -32600 } });
    serve.send(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "no/such/method" }));
    expect(await serve.answer(1)).toMatchObject({ error: { code: -32601 } });
    serve.send(JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/call" }));
    expect(await serve.answer(2)).toMatchObject({ error: { code: -32602 } });
    serve.send(JSON.stringify({ jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "no_such_tool", arguments: {} } }));
    expect(await serve.answer(3)).toMatchObject({ error: { code: -32602 } });
    // A 5 MB line: a 5 MB argument echoed back, cut to max_output_bytes with a marker.
    serve.send(
      JSON.stringify({ jsonrpc: "2.0", id: 4, method: "tools/call", params: { name: "echo_echo", arguments: { text: "y".repeat(5 * 1024 * 1024) } } }),
    );
    const big = (await serve.answer(4)) as { result: { content: { text: string }[]; _meta: Record<string, unknown> } };
    expect(big.result.content.at(-1)?.text).toContain("output cut");
    expect(big.result._meta).toMatchObject({ "abridge/trust": "untrusted-tool-output", "abridge/server": "echo" });
    serve.send(JSON.stringify({ jsonrpc: "2.0", id: 5, method: "tools/call", params: { name: "echo_echo", arguments: { text: "alive" } } }));
    expect(await serve.answer(5)).toMatchObject({ result: { content: [{ type: "text", text: "alive" }] } });
  });

  it("a 20 MB request line is answered -32600 (request too large, id null); serving goes on", async () => {
    const { config } = await setup();
    const serve = rawServe(config);
    expect(await serve.initialize()).toHaveProperty("result.serverInfo.name", "abridge");
    serve.send(JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }));
    // Over the 16 MiB default bound (and the SDK transport's 10 MiB, which used to end serve).
    serve.send(
      JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "echo_echo", arguments: { text: "w".repeat(20 * 1000 * 1000) } } }),
    );
    expect(await serve.answer(null)).toMatchObject({ error: { code: -32600, message: expect.stringContaining("request too large") } });
    serve.send(JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "echo_echo", arguments: { text: "alive" } } }));
    expect(await serve.answer(2)).toMatchObject({ result: { content: [{ type: "text", text: "alive" }] } });
    expect(serve.child.exitCode).toBeNull();
  });

  it("a client that cancels mid-call cancels the upstream call (stdio)", async () => {
    const { config } = await setup();
    const session: ServeSession = await serveOverStdio(config, ["--log-level", "debug"]);
    cleanups.push(() => session.close());
    const controller = new AbortController();
    const call = session.client.callTool({ name: "slow_sleep", arguments: { ms: 60_000, steps: 600 } }, undefined, {
      signal: controller.signal,
      onprogress: () => controller.abort(new Error("client gave up")),
    });
    await expect(call).rejects.toThrow();
    await session.untilStderr(/cancelled \d+/, "the upstream to see the cancellation", 20_000);
    const ok = await session.client.callTool({ name: "echo_echo", arguments: { text: "next" } });
    expect(ok.content).toEqual([{ type: "text", text: "next" }]);
  });

  it("a client that disconnects mid-call (stdio): abridge exits and takes its upstreams with it", async () => {
    const { config, marker } = await setup();
    const session = await serveOverStdio(config);
    await waitFor(() => pidsWithMarker(marker).length === 2, { what: "both upstreams to run" });
    // Disconnect once the upstream is demonstrably working on the call (it reports progress).
    let inFlight!: () => void;
    const working = new Promise<void>((resolve) => (inFlight = resolve));
    void session.client
      .callTool({ name: "slow_sleep", arguments: { ms: 60_000, steps: 600 } }, undefined, { onprogress: () => inFlight() })
      .catch(() => undefined);
    await working;
    await session.close();
    await waitFor(() => pidsWithMarker(marker).length === 0 && (session.pid === undefined || !pidsWithMarker(BIN).includes(session.pid)), {
      what: "abridge and its upstreams to exit",
    });
  });
});
