/**
 * Bad input on the bus and on the command line: a malformed message gets a `bad_request` answer
 * (to its reply subject, else on tool.result.<agent>, else the log) and the worker serves the next
 * call; a bad `--nats`, `--agent` or an unreachable NATS server stops `abridge bus` with a clear
 * message, a stable code and a non-zero exit, before any upstream is started.
 */
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { BusClient } from "../../src/index.js";
import { fixtureServerToml, pidsWithMarker, runAbridge, writeConfig } from "../helpers/cliHarness.js";
import { freePort, type NatsServer } from "../helpers/natsServer.js";
import { body, BusRig, collect, requestHeaders, type WorkerProcess } from "./busHarness.js";
import { useTempDir } from "../helpers/tempDir.js";

let rig: BusRig;
let nats: NatsServer;
let worker: WorkerProcess;
let client: BusClient;
let raw: NatsConnection;
let configFile: string;
let marker: string;

beforeAll(async () => {
  rig = await BusRig.open("bus-malformed");
  ({ nats, raw, marker } = rig);
  configFile = await writeConfig(
    rig.dir,
    ['mode = "full"', 'cache_dir = "cache"', fixtureServerToml("echo", "echoServer.ts", ["--marker", marker])].join("\n"),
  );
  worker = await rig.worker({ config: configFile, nats: nats.url, agent: "alpha" });
  client = await rig.client();
}, 120_000);

afterAll(async () => rig?.close());

/** A request on tool.invoke.mcp with a reply subject; the answer's body. */
async function ask(payload: string, headers = requestHeaders()): Promise<Record<string, unknown>> {
  const reply = await raw.request("tool.invoke.mcp", payload, { timeout: 30_000, headers });
  expect(reply.headers?.get("Content-Trust")).toBe("tool-output");
  return body(reply);
}

/** The worker still serves: a well-formed call after the bad message is answered. */
async function stillServes(): Promise<void> {
  expect(await client.callTool("alpha", "echo_echo", { text: "still here" })).toMatchObject({ content: [{ type: "text", text: "still here" }] });
}

describe("abridge bus: malformed messages", () => {
  it("answers a body that is not JSON with bad_request, then serves the next call", async () => {
    const answer = await ask("{not json");
    expect(answer).toMatchObject({ ok: false, id: null, agent: "alpha", worker: worker.id, error: { code: "bad_request", retryable: false } });
    expect((answer.error as { message: string }).message).toMatch(/malformed message on tool\.invoke\.mcp: not JSON/);
    await stillServes();
  });

  it("answers a request of the wrong shape with bad_request naming the field, keeping its id", async () => {
    const typo = await ask(JSON.stringify({ id: "typo", agent: "alpha", tool: "echo_echo", args: { text: "x" } }));
    expect(typo).toMatchObject({ ok: false, id: "typo", error: { code: "bad_request" } });
    expect((typo.error as { message: string }).message).toContain('"args"');
    const noTool = await ask(JSON.stringify({ id: 3, agent: "alpha" }));
    expect(noTool).toMatchObject({ ok: false, id: 3, error: { code: "bad_request" } });
    expect((noTool.error as { message: string }).message).toContain("tool");
    const notObject = await ask("[1,2,3]");
    expect(notObject).toMatchObject({ ok: false, id: null, error: { code: "bad_request" } });
    await stillServes();
  });

  it("refuses a request without Content-Trust: tool-request, or marked as a tool's output", async () => {
    const call = JSON.stringify({ id: "bare", agent: "alpha", tool: "echo_echo", arguments: { text: "x" } });
    const bare = await ask(call, requestHeaders(null));
    expect(bare).toMatchObject({ ok: false, id: "bare", error: { code: "bad_request" } });
    expect((bare.error as { message: string }).message).toContain("Content-Trust: tool-request (got none)");
    const replayed = await ask(call, requestHeaders("tool-output"));
    expect((replayed.error as { message: string }).message).toContain('(got "tool-output")');
    await stillServes();
  });

  it("publishes the error on tool.result.<agent> when the request has no reply subject but names the agent", async () => {
    const results = await collect(raw, "tool.result.alpha");
    try {
      raw.publish("tool.invoke.mcp", JSON.stringify({ id: "lost", agent: "alpha", tool: 42 }), { headers: requestHeaders() });
      const answer = await results.next((m) => body(m).id === "lost", "the error on tool.result.alpha");
      expect(answer.headers?.get("Content-Trust")).toBe("tool-output");
      expect(body(answer)).toMatchObject({ ok: false, error: { code: "bad_request" } });
    } finally {
      results.stop();
    }
    await stillServes();
  });

  it("logs a message with neither a reply subject nor a readable agent, and goes on", async () => {
    raw.publish("tool.invoke.mcp", "\u0000garbage", { headers: requestHeaders() });
    await worker.untilStderr("malformed bus message with no reply subject and no readable agent", "the log line");
    await stillServes();
  });
});

describe("abridge bus: bad command lines and an unreachable server", () => {
  const temp = useTempDir({ prefix: "abridge-bus-unreachable-", marker: "bus-unreachable" });
  it("refuses a --nats that is not a nats:// URL, with USAGE and exit 2", async () => {
    for (const [value, expected] of [
      ["http://127.0.0.1:4222", 'expected the scheme nats:// (or tls://), got "http"'],
      ["127.0.0.1:4222", 'expected a URL such as nats://127.0.0.1:4222, got "127.0.0.1:4222"'],
      ["nats://", 'no host in "nats://"'],
      ["not a url", "expected a URL such as nats://127.0.0.1:4222"],
      ["nats://127.0.0.1:4222/path", "expected only scheme, host and port"],
    ] as const) {
      const run = await runAbridge(["bus", "--nats", value, "--agent", "alpha", "--config", configFile]);
      expect(run.code, value).toBe(2);
      expect(run.stderr, value).toContain(`--nats: ${expected}`);
      expect(run.stderr, value).toContain("[USAGE]");
    }
  });

  it("requires --nats and --agent, and an agent name that is one subject token", async () => {
    const noNats = await runAbridge(["bus", "--agent", "alpha", "--config", configFile]);
    expect(noNats).toMatchObject({ code: 2, stderr: expect.stringContaining("--nats URL is required") });
    const noAgent = await runAbridge(["bus", "--nats", nats.url, "--config", configFile]);
    expect(noAgent).toMatchObject({ code: 2, stderr: expect.stringContaining("--agent NAME is required") });
    const dotted = await runAbridge(["bus", "--nats", nats.url, "--agent", "a.b", "--config", configFile]);
    expect(dotted).toMatchObject({ code: 2, stderr: expect.stringContaining('--agent: expected 1 to 64 letters, digits, "_" or "-"') });
    const reserved = await runAbridge(["bus", "--nats", nats.url, "--agent", "refresh", "--config", configFile]);
    expect(reserved).toMatchObject({ code: 2, stderr: expect.stringContaining('"refresh" is reserved') });
    const timeout = await runAbridge(["bus", "--nats", nats.url, "--agent", "alpha", "--timeout-ms", "soon", "--config", configFile]);
    expect(timeout).toMatchObject({ code: 2, stderr: expect.stringContaining('--timeout-ms: expected a positive integer, got "soon"') });
  });

  it("fails with BUS_UNAVAILABLE and exit 1 when no NATS server answers, starting no upstream", async () => {
    const mark = temp.marker;
    const config = await writeConfig(temp.path, fixtureServerToml("echo", "echoServer.ts", ["--marker", mark]));
    const port = await freePort();
    const run = await runAbridge(["bus", "--nats", `nats://127.0.0.1:${port}`, "--agent", "alpha", "--config", config]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(`cannot connect to the NATS server at nats://127.0.0.1:${port}`);
    expect(run.stderr).toContain("[BUS_UNAVAILABLE]");
    expect(pidsWithMarker(mark)).toEqual([]);
  });

  it("keeps a password in the URL out of its messages", async () => {
    const port = await freePort();
    const run = await runAbridge(["bus", "--nats", `nats://me:s3cret-pw@127.0.0.1:${port}`, "--agent", "alpha", "--config", configFile]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("[BUS_UNAVAILABLE]");
    expect(run.stderr).not.toContain("s3cret-pw");
  });
});
