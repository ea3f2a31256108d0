/**
 * Arguments nested thousands of levels deep. A 10 KB tools/call whose arguments nest 5,000 deep
 * overflowed `JSON.stringify` on the way to the server; the overflow was taken for an unreachable
 * server, so an HTTP upstream's connection was closed and reopened and another client's call in
 * flight on it failed with UPSTREAM_EXITED. Now such arguments are refused where every call enters
 * the core (INPUT_INVALID naming the depth and the limit), and below that a request that cannot be
 * written as JSON (too deep, a BigInt, a cycle) fails alone with INPUT_INVALID: the connection,
 * the process and the other calls on it go on.
 */
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ErrorCode } from "../../src/model/errors.js";
import type { JsonObject } from "../../src/model/types.js";
import { MAX_SCHEMA_DEPTH, nestingDepth } from "../../src/upstream/schemaDepth.js";
import { startHttpFixture, type StreamableHttpFixture } from "../fixtures/httpFixtures.js";
import { fixtureServerToml, tempDir, writeConfig } from "../helpers/cliHarness.js";
import { fixtureServer, serverConfig } from "../helpers/processes.js";
import { memoryLogger } from "../helpers/memoryLogger.js";
import { BIN } from "../helpers/serveHarness.js";
import { Watch } from "../helpers/waitFor.js";
import { makePool } from "../upstream/harness.js";
import { fixtureToml, resultText, startBridge } from "../policy/bridgeHarness.js";
import { rejection } from "../helpers/rejection.js";

const DEPTH = 5_000;
/** `{"a":{"a":...{"a":1}...}}`, `depth` objects deep, as a client sends it (about 5 bytes a level). */
const deepText = (depth: number): string => `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`;
const deepArgs = (): JsonObject => JSON.parse(deepText(DEPTH)) as JsonObject;

const fixtures: StreamableHttpFixture[] = [];
afterEach(async () => {
  await Promise.all(fixtures.splice(0).map((f) => f.close()));
});

async function httpFixture(): Promise<StreamableHttpFixture> {
  const fixture = await startHttpFixture({ hold: true });
  fixtures.push(fixture);
  return fixture;
}

describe("nestingDepth", () => {
  it("counts JSON levels on any depth without recursion, and finds cycles", () => {
    expect(nestingDepth(1)).toBe(0);
    expect(nestingDepth({})).toBe(1);
    expect(nestingDepth({ a: [1, { b: {} }] })).toBe(4);
    expect(nestingDepth(deepArgs())).toBe(DEPTH);
    const cyclic: Record<string, unknown> = { list: [] };
    (cyclic.list as unknown[]).push({ back: cyclic });
    expect(nestingDepth(cyclic)).toBe("cycle");
    const shared = { leaf: {} };
    expect(nestingDepth({ x: shared, y: [shared] })).toBe(4);
  });
});

describe("a request that cannot be written as JSON fails alone (below the core's edge)", () => {
  it("HTTP upstream: deep, BigInt and cyclic params fail with INPUT_INVALID; the connection and a call in flight on it go on", async () => {
    const web = await httpFixture();
    const { logger, lines } = memoryLogger();
    const pool = makePool({ servers: [serverConfig({ name: "web", url: web.url })], logger });
    await pool.start();
    const held = pool.callTool("web", "hold", {});
    await web.held.whenWaiting(1);
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    for (const args of [deepArgs(), { n: 1n } as unknown as JsonObject, cyclic as JsonObject]) {
      const error = await rejection(pool.callTool("web", "echo", args));
      expect(error.code).toBe(ErrorCode.INPUT_INVALID);
      expect(error.message).toMatch(/^web: tools\/call not sent: its params cannot be written as JSON/);
    }
    web.held.release();
    expect((await held).content).toEqual([{ type: "text", text: "released" }]);
    expect((await pool.callTool("web", "echo", { text: "after" })).content).toEqual([{ type: "text", text: "after" }]);
    expect(web.sessionsOpened).toBe(1);
    expect(lines.filter((l) => /unreachable|reconnecting|restarting/.test(l))).toEqual([]);
  });

  it("stdio upstream: deep params fail with INPUT_INVALID; the process and a call in flight on it go on", async () => {
    const { logger, lines, until } = memoryLogger();
    const pool = makePool({ servers: [fixtureServer("slow", "rawEchoServer.ts", ["--stall"])], logger });
    await pool.start();
    const [pid] = pool.pids();
    const stalled = pool.callTool("slow", "stall", {});
    await until(() => lines.some((l) => l.includes(`stalled ${pid}`)), "the server to take the slow call");
    const error = await rejection(pool.callTool("slow", "echo", deepArgs()));
    expect(error.code).toBe(ErrorCode.INPUT_INVALID);
    expect(error.message).toMatch(/^slow: tools\/call not sent: .*cannot be written as JSON/);
    process.kill(pid!, "SIGUSR2");
    expect((await stalled).content).toEqual([{ type: "text", text: "read again" }]);
    expect((await pool.callTool("slow", "echo", { text: "after" })).content).toEqual([{ type: "text", text: "after" }]);
    expect(pool.pids()).toEqual([pid]);
    expect(lines.filter((l) => /connection closed|restarting/.test(l))).toEqual([]);
  });
});

describe("arguments deeper than the limit are refused where calls enter the core", () => {
  it("library: INPUT_INVALID naming the depth and the limit, by exposed name and by server and tool; the call in flight on the HTTP upstream completes", async () => {
    const web = await httpFixture();
    const { bridge, lines } = await startBridge(`mode = "full"\n[servers.web]\nurl = ${JSON.stringify(web.url)}\n`);
    const held = bridge.callTool("web_hold", {});
    await web.held.whenWaiting(1);
    for (const refused of [bridge.callTool("web_echo", deepArgs()), bridge.callServerTool("web", "echo", deepArgs())]) {
      const error = await rejection(refused);
      expect(error.code).toBe(ErrorCode.INPUT_INVALID);
      expect(error.message).toMatch(new RegExp(`nest ${DEPTH} levels deep; the limit is ${MAX_SCHEMA_DEPTH} levels`));
    }
    // At the limit is fine: the call is forwarded and answered.
    const atLimit = JSON.parse(`{"text":"deep enough","x":${deepText(MAX_SCHEMA_DEPTH - 1)}}`) as JsonObject;
    expect(resultText(await bridge.callTool("web_echo", atLimit))).toBe("deep enough");
    web.held.release();
    expect(resultText(await held)).toBe("released");
    expect(web.sessionsOpened).toBe(1);
    expect(lines.filter((l) => /unreachable|reconnecting|restarting/.test(l))).toEqual([]);
  }, 180_000);

  it("library: the same with a stdio upstream, whose process stays", async () => {
    const { bridge, lines, until, pids } = await startBridge(`mode = "full"\n${fixtureToml("slow", "rawEchoServer.ts", ["--stall"])}`);
    const [pid] = pids();
    const stalled = bridge.callTool("slow_stall", {});
    await until(() => lines.some((l) => l.includes(`stalled ${pid}`)), "the server to take the slow call");
    const error = await rejection(bridge.callTool("slow_echo", deepArgs()));
    expect(error.code).toBe(ErrorCode.INPUT_INVALID);
    expect(error.message).toMatch(new RegExp(`nest ${DEPTH} levels deep; the limit is ${MAX_SCHEMA_DEPTH} levels`));
    process.kill(pid!, "SIGUSR2");
    const answer = await stalled.catch((err: unknown) => {
      throw new Error(`the stalled call failed: ${String(err)}\nbridge log:\n${lines.slice(-40).join("\n")}`);
    });
    expect(resultText(answer)).toBe("read again");
    expect(pids()).toEqual([pid]);
    expect(lines.filter((l) => /connection closed|restarting/.test(l))).toEqual([]);
  });
});

/** `abridge serve` over stdio spoken to in raw lines (the test's own JSON.stringify cannot write 5,000 levels). */
interface RawServe {
  child: ChildProcessWithoutNullStreams;
  stderr(): string;
  /** serve's last log lines, for a failed expectation's message. */
  log(): string;
  /** Writes `line` and resolves with the answer to `id`. */
  request(id: number, line: string): Promise<Record<string, unknown>>;
  /** Resolves once `check` holds, checked now and at every piece of stderr. */
  untilStderr(check: (stderr: string) => boolean, what: string): Promise<void>;
}

const serves: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(serves.splice(0).map((stop) => stop()));
});

async function rawServe(toml: string): Promise<RawServe> {
  const { dir, cleanup } = await tempDir();
  const config = await writeConfig(dir, `mode = "full"\ncache_dir = ${JSON.stringify(path.join(dir, "cache"))}\n${toml}`);
  const child = spawn(process.execPath, ["--import", "tsx", BIN, "serve", "--config", config, "--no-watch", "--log-level", "debug"], {
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "" },
    stdio: ["pipe", "pipe", "pipe"],
  });
  // A serve that died is reported by the exit below, not by an EPIPE nobody listens to.
  child.stdin.on("error", () => undefined);
  let stderr = "";
  const written = new Watch();
  child.stderr.on("data", (b: Buffer) => {
    stderr += b.toString("utf8");
    written.changed();
  });
  const answers = new Map<number, { resolve: (message: Record<string, unknown>) => void; reject: (error: Error) => void }>();
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  void exited.then(() => {
    for (const { reject } of answers.values())
      reject(new Error(`serve exited (${child.exitCode ?? child.signalCode}); its log ends:\n${stderr.split("\n").slice(-40).join("\n")}`));
  });
  let buffer = "";
  child.stdout.on("data", (b: Buffer) => {
    buffer += b.toString("utf8");
    for (let newline = buffer.indexOf("\n"); newline !== -1; newline = buffer.indexOf("\n")) {
      const message = JSON.parse(buffer.slice(0, newline)) as Record<string, unknown>;
      buffer = buffer.slice(newline + 1);
      if (typeof message.id === "number") answers.get(message.id)?.resolve(message);
    }
  });
  serves.push(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.stdin.end();
      await exited;
    }
    await cleanup();
  });
  const serve: RawServe = {
    child,
    stderr: () => stderr,
    log: () => `serve's log ends:\n${stderr.split("\n").slice(-40).join("\n")}`,
    request: (id, line) =>
      new Promise((resolve, reject) => {
        answers.set(id, { resolve, reject });
        child.stdin.write(`${line}\n`);
      }),
    untilStderr: (check, what) => written.until(() => check(stderr), { what, detail: () => serve.log() }),
  };
  await serve.request(
    0,
    JSON.stringify({
      jsonrpc: "2.0",
      id: 0,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "deep", version: "1" } },
    }),
  );
  child.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" })}\n`);
  return serve;
}

/** The pid in the upstream's "stalled <pid>" line, once serve has logged the whole line. */
async function stalledPid(serve: RawServe): Promise<number> {
  const logged = /line="stalled (\d+)"/;
  await serve.untilStderr((s) => logged.test(s), "the upstream to take the slow call");
  return Number(logged.exec(serve.stderr())![1]);
}

const callLine = (id: number, name: string, argumentsText: string): string =>
  `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":${JSON.stringify(name)},"arguments":${argumentsText}}}`;

describe("serve over stdio", () => {
  it("answers a call with 5,000-deep arguments with -32602 naming the depth and the limit; the slow call in flight completes on the same process", async () => {
    const serve = await rawServe(fixtureServerToml("slow", "rawEchoServer.ts", ["--stall"]));
    const stalled = serve.request(1, callLine(1, "slow_stall", "{}"));
    const pid = await stalledPid(serve);
    const text = deepText(DEPTH);
    expect(text.length).toBeLessThan(32 * 1024);
    const refused = await serve.request(2, callLine(2, "slow_echo", text));
    expect(refused.error, serve.log()).toMatchObject({
      code: -32602,
      message: expect.stringMatching(new RegExp(`nest ${DEPTH} levels deep; the limit is ${MAX_SCHEMA_DEPTH} levels`)),
    });
    process.kill(pid, "SIGUSR2");
    expect(await stalled, serve.log()).toMatchObject({ result: { content: [{ type: "text", text: "read again" }] } });
    expect(await serve.request(3, callLine(3, "slow_echo", '{"text":"after"}'))).toMatchObject({ result: { content: [{ type: "text", text: "after" }] } });
    // One process all along: started once, never restarted.
    expect(serve.stderr().match(/raw echo ready \d+/g), serve.log()).toEqual([`raw echo ready ${pid}`]);
    expect(serve.stderr(), serve.log()).not.toMatch(/connection closed|restarting/);
  });

  it("answers calls past max_pending_requests at once as a retryable UPSTREAM_BUSY tool error; those within it complete", async () => {
    const serve = await rawServe(fixtureServerToml("slow", "rawEchoServer.ts", ["--stall"], "max_pending_requests = 2"));
    const stalled = serve.request(1, callLine(1, "slow_stall", "{}"));
    const pid = await stalledPid(serve);
    const within = serve.request(2, callLine(2, "slow_echo", '{"text":"within"}'));
    const busy = await serve.request(3, callLine(3, "slow_echo", '{"text":"past"}'));
    expect(busy, serve.log()).toMatchObject({
      result: {
        isError: true,
        content: [{ type: "text", text: expect.stringMatching(/max_pending_requests = 2.*\[UPSTREAM_BUSY, retryable\]/) }],
        _meta: { "abridge/error": { code: "UPSTREAM_BUSY", retryable: true } },
      },
    });
    process.kill(pid, "SIGUSR2");
    expect(await stalled, serve.log()).toMatchObject({ result: { content: [{ type: "text", text: "read again" }] } });
    expect(await within, serve.log()).toMatchObject({ result: { content: [{ type: "text", text: "within" }] } });
  });
});
