/**
 * The stdio fast path of tools/call (src/serve/fastToolCalls.ts) against the SDK server path it
 * stands beside: the same requests sent to a front end with the fast path and to one without must
 * get the same answers (policy refusals, argument validation, unknown tools, output limits, tool
 * errors), and what the SDK's protocol layer did for a call (progress, cancellation reaching the
 * upstream, relayed sampling, aborting on close) must still happen. Real bridges over real fixture
 * servers; the client side is a pair of in-process streams written line by line.
 */
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { PassThrough } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import type { Bridge } from "../../src/core/bridge.js";
import { FastToolCalls } from "../../src/serve/fastToolCalls.js";
import { createMcpFrontend, type McpFrontend } from "../../src/serve/mcpFrontend.js";
import { serveStdio } from "../../src/serve/serveStdio.js";
import { StdioServerTransport } from "../../src/serve/stdioServerTransport.js";
import { MessageLog } from "../helpers/messageLog.js";
import { fixtureToml, startBridge } from "../policy/bridgeHarness.js";

type Message = Record<string, unknown> & {
  id?: unknown;
  method?: string;
  params?: Record<string, unknown>;
  result?: Record<string, unknown>;
  error?: { code: number; message: string };
};

/** A client session over two in-process streams, as a stdio client would drive `serve`. */
class Session {
  readonly stdin = new PassThrough();
  readonly stdout = new PassThrough();
  private readonly log = new MessageLog<Message>();
  readonly messages = this.log.messages;
  private buffer = "";

  constructor() {
    this.stdout.setEncoding("utf8");
    this.stdout.on("data", (chunk: string) => {
      this.buffer += chunk;
      let newline: number;
      while ((newline = this.buffer.indexOf("\n")) !== -1) {
        const line = this.buffer.slice(0, newline);
        this.buffer = this.buffer.slice(newline + 1);
        if (line.trim()) this.onMessage(JSON.parse(line) as Message);
      }
    });
  }

  /** Answers the server's own requests (sampling) with `answer`; set by a test. */
  answer?: (request: Message) => Record<string, unknown>;

  private onMessage(message: Message): void {
    this.messages.push(message);
    if (message.method !== undefined && message.id !== undefined && this.answer) {
      this.send({ jsonrpc: "2.0", id: message.id, result: this.answer(message) });
    }
    this.log.wake();
  }

  send(message: Message): void {
    this.stdin.write(`${JSON.stringify(message)}\n`);
  }

  until<T>(test: () => T | undefined, what: string, timeoutMs = 30_000): Promise<T> {
    return this.log.until(test, what, timeoutMs);
  }

  request(id: number | string, method: string, params?: Record<string, unknown>): Promise<Message> {
    this.send({ jsonrpc: "2.0", id, method, ...(params ? { params } : {}) });
    return this.until(() => this.messages.find((m) => m.id === id && m.method === undefined), `the answer to ${String(id)}`);
  }

  async initialize(capabilities: Record<string, unknown> = {}): Promise<void> {
    await this.request("init", "initialize", { protocolVersion: "2025-06-18", capabilities, clientInfo: { name: "fast-test", version: "1.0.0" } });
    this.send({ jsonrpc: "2.0", method: "notifications/initialized" });
  }
}

/** A front end wired as serveStdio wires it, counting what the fast path took; `fast` false leaves every request to the SDK server. */
async function connect(
  bridge: Bridge,
  fast: boolean,
): Promise<{ session: Session; frontend: McpFrontend; taken: string[]; calls: FastToolCalls | undefined; close: () => Promise<void> }> {
  const session = new Session();
  const frontend = createMcpFrontend(bridge, { mode: "compact", client: "stdio" });
  const transport = new StdioServerTransport(session.stdin, session.stdout);
  const taken: string[] = [];
  const calls = fast ? new FastToolCalls(frontend, frontend.server, (message) => transport.send(message)) : undefined;
  if (calls) {
    transport.intercept = (message) => {
      const took = calls.take(message);
      if (took) taken.push(String((message as Message).method));
      return took;
    };
  }
  await frontend.server.connect(transport);
  return {
    session,
    frontend,
    taken,
    calls,
    close: async () => {
      frontend.dispose();
      await frontend.server.close();
      calls?.abortAll();
    },
  };
}

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

function bridgeToml(): string {
  return [
    'mode = "compact"',
    fixtureToml("echo", "echoServer.ts", [], ['deny = ["add"]']),
    fixtureToml("conf", "conformanceServer.ts", [], ["max_output_bytes = 300"]),
    fixtureToml("slow", "slowServer.ts"),
  ].join("\n");
}

describe("the stdio fast path of tools/call", () => {
  it("answers every plain call as the SDK server path does, and leaves other requests to it", async () => {
    const { bridge } = await startBridge(bridgeToml());
    const requests: [string, Record<string, unknown>][] = [
      ["ok", { name: "echo_echo", arguments: { text: "hello" } }],
      ["no arguments", { name: "conf_test_simple_text" }],
      ["invalid arguments", { name: "echo_echo", arguments: { text: 5 } }],
      ["unknown tool", { name: "echo_ecko", arguments: {} }],
      ["denied tool", { name: "echo_add", arguments: { a: 1, b: 2 } }],
      ["over the output limit", { name: "conf_test_multiple_content_types", arguments: {} }],
      ["tool error", { name: "conf_test_error_handling", arguments: {} }],
      ["structured content", { name: "conf_test_structured_content", arguments: {} }],
      ["name not a string (SDK path)", { name: 5 }],
      ["arguments not an object (SDK path)", { name: "echo_echo", arguments: ["x"] }],
      ["task-augmented (SDK path)", { name: "echo_echo", arguments: { text: "t" }, task: { ttl: 1000 } }],
    ];
    const answers: Record<string, Message[]> = {};
    const takenBy: Record<string, string[]> = {};
    for (const fast of [true, false]) {
      const { session, taken, close } = await connect(bridge, fast);
      closers.push(close);
      await session.initialize();
      const label = fast ? "fast" : "sdk";
      answers[label] = [];
      for (const [index, [, params]] of requests.entries()) answers[label].push(await session.request(index + 10, "tools/call", params));
      takenBy[label] = taken;
    }
    const byName = (list: Message[]): Record<string, Message> => Object.fromEntries(requests.map(([name], i) => [name, list[i]!]));
    const fast = byName(answers.fast!);
    expect(fast).toEqual(byName(answers.sdk!));
    // Plain calls went the fast way; the other three did not.
    expect(takenBy.fast).toEqual(Array(requests.length - 3).fill("tools/call"));
    expect(takenBy.sdk).toEqual([]);

    // And the answers are the bridge's, not merely equal.
    expect(fast.ok!.result?.content).toEqual([{ type: "text", text: "hello" }]);
    expect(fast["invalid arguments"]!.result).toMatchObject({ isError: true });
    expect(JSON.stringify(fast["invalid arguments"]!.result)).toContain("The call was not forwarded");
    expect(fast["unknown tool"]!.error?.code).toBe(-32602);
    expect(fast["unknown tool"]!.error?.message).toContain("echo_echo");
    expect(fast["denied tool"]!.result).toMatchObject({ isError: true });
    expect(JSON.stringify(fast["denied tool"]!.result)).toContain("deny");
    expect(JSON.stringify(fast["over the output limit"]!.result).length).toBeLessThan(2_000);
    expect(JSON.stringify(fast["over the output limit"]!.result)).toMatch(/max_output_bytes|cut|bytes/);
    expect(fast["tool error"]!.result?.isError).toBe(true);
    // Not the plain text form: checked with the SDK's result schema, and cut at the limit like any result.
    expect((fast["structured content"]!.result?.content as { type: string }[]).slice(0, 2).map((c) => c.type)).toEqual(["text", "image"]);
    expect(fast["name not a string (SDK path)"]!.error?.code).toBe(-32602);
  });

  it("relays progress, and a client's notifications/cancelled reaches the upstream with no answer sent", async () => {
    const test = await startBridge(bridgeToml());
    const { session, taken, close } = await connect(test.bridge, true);
    closers.push(close);
    await session.initialize();

    const done = await session.request(30, "tools/call", { name: "slow_sleep", arguments: { ms: 300, steps: 3 }, _meta: { progressToken: "p-30" } });
    expect(done.result?.content).toEqual([{ type: "text", text: "slept 300 ms" }]);
    const progress = session.messages.filter((m) => m.method === "notifications/progress" && m.params?.progressToken === "p-30").map((m) => m.params?.progress);
    expect(progress).toEqual([1, 2, 3]);

    session.send({
      jsonrpc: "2.0",
      id: 31,
      method: "tools/call",
      params: { name: "slow_sleep", arguments: { ms: 60_000, steps: 600 }, _meta: { progressToken: 31 } },
    });
    await session.until(() => session.messages.find((m) => m.params?.progressToken === 31), "progress of the long call");
    session.send({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 31, reason: "stop" } });
    // The slow fixture writes "cancelled <id>" to its stderr, which the bridge logs.
    await test.until(() => test.lines.some((line) => /cancelled \d+/.test(line)), "the upstream to see the cancellation");
    expect(taken).toEqual(["tools/call", "tools/call", "notifications/cancelled"]);
    await session.request(32, "ping");
    expect(session.messages.some((m) => m.id === 31)).toBe(false);
  });

  it("relays an upstream's sampling request to the calling client and its answer back", async () => {
    const { bridge } = await startBridge(bridgeToml());
    const { session, taken, close } = await connect(bridge, true);
    closers.push(close);
    session.answer = (request) => {
      const text = ((request.params?.messages as { content: { text: string } }[])[0]!.content.text ?? "").toUpperCase();
      return { role: "assistant", content: { type: "text", text }, model: "test-model" };
    };
    await session.initialize({ sampling: {} });
    const answer = await session.request(40, "tools/call", { name: "conf_test_sampling", arguments: { prompt: "shout this" } });
    expect(answer.result?.content).toEqual([{ type: "text", text: "LLM response: SHOUT THIS" }]);
    expect(session.messages.some((m) => m.method === "sampling/createMessage")).toBe(true);
    expect(taken).toEqual(["tools/call"]);
  });

  it("on shutdown, answers a call in flight within the grace and then cancels what is left upstream", async () => {
    const test = await startBridge(bridgeToml());
    const session = new Session();
    const stop = new AbortController();
    const serving = serveStdio(test.bridge, { stdin: session.stdin, stdout: session.stdout, mode: "compact", signal: stop.signal, graceMs: 1_500 });
    closers.push(async () => {
      stop.abort();
      await serving;
    });
    await session.initialize();
    // Call 50 holds at the slow fixture until its gate file exists, opened only once the stop has
    // begun: it is in flight at shutdown and must be answered within the grace.
    const gate = path.join(test.dir, "gate-50");
    session.send({ jsonrpc: "2.0", id: 50, method: "tools/call", params: { name: "slow_sleep", arguments: { gate } } });
    session.send({
      jsonrpc: "2.0",
      id: 51,
      method: "tools/call",
      params: { name: "slow_sleep", arguments: { ms: 60_000, steps: 600 }, _meta: { progressToken: "p-51" } },
    });
    await session.until(() => session.messages.find((m) => m.params?.progressToken === "p-51"), "progress of the long call");
    await test.until(() => test.lines.filter((line) => /sleeping \d+/.test(line)).length >= 2, "both calls at the slow fixture");
    stop.abort();
    await writeFile(gate, "");
    await serving;
    expect(session.messages.find((m) => m.id === 50)?.result?.content).toEqual([{ type: "text", text: "gate opened" }]);
    expect(session.messages.some((m) => m.id === 51)).toBe(false);
    await test.until(() => test.lines.some((line) => /cancelled \d+/.test(line)), "the upstream to see the call left at shutdown cancelled");
  });
});
