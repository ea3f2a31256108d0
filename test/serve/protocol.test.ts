/**
 * `abridge serve` at the protocol level. Over stdio with a raw child process (JSON-RPC lines
 * written to its stdin by hand): the JSON-RPC error codes, progress, cancellation, untouched tool
 * results, and the end of stdin. Over streamable HTTP with SDK clients: what an upstream sends back
 * during a call or a prompts/get (sampling, elicitation, roots, log lines) reaches the calling
 * client and only it, resource subscriptions and completions are routed to the owning upstream.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
  LoggingMessageNotificationSchema,
  ResourceUpdatedNotificationSchema,
  type CallToolResult,
  type ClientCapabilities,
} from "@modelcontextprotocol/sdk/types.js";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { fixtureServerToml, pidsWithMarker, writeConfig } from "../helpers/cliHarness.js";
import { fixtureCommand, isAlive, killAll } from "../helpers/processes.js";
import { BIN, serveOverHttp, type HttpServeProcess } from "../helpers/serveHarness.js";
import { MessageLog } from "../helpers/messageLog.js";
import { useTempDir } from "../helpers/tempDir.js";

type Message = Record<string, unknown> & {
  id?: unknown;
  method?: string;
  params?: Record<string, unknown>;
  result?: Record<string, unknown>;
  error?: { code: number; message: string };
};

/** `abridge serve` over stdio, driven line by line. */
class RawServe {
  private readonly log = new MessageLog<Message>(() => `\nstderr: ${this.stderrText.slice(-1500)}`);
  readonly messages = this.log.messages;
  private buffer = "";
  private stderrText = "";

  constructor(readonly child: ChildProcess) {
    child.stdout!.setEncoding("utf8");
    child.stdout!.on("data", (chunk: string) => {
      this.buffer += chunk;
      let newline: number;
      while ((newline = this.buffer.indexOf("\n")) !== -1) {
        const line = this.buffer.slice(0, newline).trim();
        this.buffer = this.buffer.slice(newline + 1);
        if (line) this.messages.push(JSON.parse(line) as Message);
      }
      this.log.wake();
    });
    child.stderr!.setEncoding("utf8");
    child.stderr!.on("data", (chunk: string) => {
      this.stderrText += chunk;
      this.log.wake();
    });
  }

  stderr(): string {
    return this.stderrText;
  }

  send(message: Message | string): void {
    this.child.stdin!.write(`${typeof message === "string" ? message : JSON.stringify(message)}\n`);
  }

  /** Resolves once `test` holds (checked on every output), or fails after a generous timeout. */
  until<T>(test: () => T | undefined, what: string, timeoutMs = 30_000): Promise<T> {
    return this.log.until(test, what, timeoutMs);
  }

  /** The response to request `id`. */
  response(id: unknown): Promise<Message> {
    return this.until(() => this.messages.find((m) => m.id === id && m.method === undefined), `the response to ${String(id)}`);
  }

  /** Sends a request and waits for its response. */
  request(id: number, method: string, params?: Record<string, unknown>): Promise<Message> {
    this.send({ jsonrpc: "2.0", id, method, ...(params ? { params } : {}) });
    return this.response(id);
  }
}

function startRaw(config: string, cacheDir: string, env: Record<string, string> = {}): RawServe {
  const child = spawn(process.execPath, ["--import", "tsx", BIN, "serve", "--config", config, "--cache-dir", cacheDir, "--no-watch", "--mode", "full"], {
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", ...env },
    stdio: ["pipe", "pipe", "pipe"],
  });
  return new RawServe(child);
}

async function initialize(raw: RawServe): Promise<Message> {
  const answer = await raw.request(1, "initialize", { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw-test", version: "1.0.0" } });
  raw.send({ jsonrpc: "2.0", method: "notifications/initialized" });
  return answer;
}

describe("abridge serve over stdio, raw JSON-RPC", () => {
  const temp = useTempDir();
  let marker: string;
  let config: string;
  let raw: RawServe | undefined;

  beforeEach(async () => {
    marker = `protocol-${randomUUID()}`;
    config = await writeConfig(
      temp.path,
      fixtureServerToml("conf", "conformanceServer.ts", ["--marker", marker], "prefix = false") +
        fixtureServerToml("slow", "slowServer.ts", ["--marker", marker]),
    );
  });

  afterEach(async () => {
    if (raw?.child.exitCode === null) {
      const exited = new Promise((resolve) => raw!.child.once("exit", resolve));
      raw.child.kill("SIGTERM");
      await exited;
    }
    raw = undefined;
    killAll(pidsWithMarker(marker));
  });

  it("answers malformed JSON -32700, invalid requests -32600, unknown methods -32601, bad params -32602, and keeps serving", async () => {
    raw = startRaw(config, path.join(temp.path, "cache"));
    const init = await initialize(raw);
    expect(init.result?.serverInfo).toMatchObject({ name: "abridge" });
    let nextId = 100;
    const stillServing = async (): Promise<void> => {
      const ping = await raw!.request(nextId++, "ping");
      expect(ping.result).toEqual({});
    };
    const nullIdErrors = (): Message[] => raw!.messages.filter((m) => m.id === null && m.error !== undefined);

    raw.send("{this is not json");
    const parse = await raw.until(() => nullIdErrors()[0], "a parse error");
    expect(parse.error?.code).toBe(-32700);
    await stillServing();

    raw.send({ jsonrpc: "2.0", id: 7 });
    const invalid = await raw.until(() => nullIdErrors()[1], "an invalid request error");
    expect(invalid.error?.code).toBe(-32600);
    raw.send('["not", "a", "message"]');
    expect((await raw.until(() => nullIdErrors()[2], "a second invalid request error")).error?.code).toBe(-32600);
    await stillServing();

    expect((await raw.request(20, "no/such/method")).error?.code).toBe(-32601);
    await stillServing();

    expect((await raw.request(21, "tools/call", { name: 5 })).error?.code).toBe(-32602);
    expect((await raw.request(22, "resources/read", {})).error?.code).toBe(-32602);
    expect((await raw.request(23, "prompts/get", { arguments: {} })).error?.code).toBe(-32602);
    expect((await raw.request(24, "tools/list", { cursor: "bm90LWEtY3Vyc29y" })).error?.code).toBe(-32602);
    // An unknown tool is the caller's mistake too (with the closest names).
    expect((await raw.request(25, "tools/call", { name: "test_simple_txt", arguments: {} })).error?.code).toBe(-32602);
    await stillServing();

    const listed = await raw.request(26, "tools/list");
    expect((listed.result?.tools as { name: string }[]).map((t) => t.name)).toEqual(expect.arrayContaining(["test_simple_text", "slow_sleep"]));
  });

  it("passes every progress notification of the slow fixture through, and notifications/cancelled cancels the upstream call", async () => {
    raw = startRaw(config, path.join(temp.path, "cache"), { ABRIDGE_LOG_LEVEL: "debug" });
    await initialize(raw);

    const done = await raw.request(30, "tools/call", { name: "slow_sleep", arguments: { ms: 400, steps: 4 }, _meta: { progressToken: "p-30" } });
    expect(done.result?.content).toEqual([{ type: "text", text: "slept 400 ms" }]);
    const progress = raw.messages.filter((m) => m.method === "notifications/progress" && m.params?.progressToken === "p-30").map((m) => m.params);
    // All four, the last one included: it used to be dropped when it shared a read with the result.
    expect(progress.map((p) => p?.progress)).toEqual([1, 2, 3, 4]);
    expect(progress.every((p) => p?.total === 4)).toBe(true);
    const doneIndex = raw.messages.indexOf(done);
    expect(raw.messages.findIndex((m) => m.params?.progressToken === "p-30" && m.params.progress === 4)).toBeLessThan(doneIndex);

    raw.send({
      jsonrpc: "2.0",
      id: 31,
      method: "tools/call",
      params: { name: "slow_sleep", arguments: { ms: 60_000, steps: 600 }, _meta: { progressToken: "p-31" } },
    });
    // The first progress proves the upstream is running the call; then cancel it.
    await raw.until(() => raw!.messages.find((m) => m.params?.progressToken === "p-31"), "progress of the long call");
    raw.send({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 31, reason: "user pressed stop" } });
    // The slow fixture writes "cancelled <its request id>" to stderr when its handler is aborted.
    await raw.until(() => (/cancelled \d+/.test(raw!.stderr()) ? true : undefined), "the slow fixture to see the cancellation");
    await raw.request(32, "ping");
    expect(raw.messages.some((m) => m.id === 31)).toBe(false);
  });

  it("hands tool results with image, audio, embedded resource, resource link and structuredContent on untouched", async () => {
    const direct = new Client({ name: "direct", version: "1.0.0" });
    const { command, args } = fixtureCommand("conformanceServer.ts", ["--marker", marker]);
    await direct.connect(new StdioClientTransport({ command, args, stderr: "ignore" }));
    let expected: CallToolResult;
    try {
      expected = (await direct.callTool({ name: "test_structured_content", arguments: {} })) as CallToolResult;
    } finally {
      await direct.close();
    }

    raw = startRaw(config, path.join(temp.path, "cache"));
    await initialize(raw);
    const answer = await raw.request(40, "tools/call", { name: "test_structured_content", arguments: {} });
    const result = answer.result as CallToolResult;
    expect(result.content).toEqual(expected.content);
    expect(result.content.map((c) => c.type)).toEqual(["text", "image", "audio", "resource", "resource_link"]);
    expect(result.structuredContent).toEqual(expected.structuredContent);
    expect(result.isError).toBeUndefined();
    // abridge may add its own _meta keys; the upstream's stay as sent.
    expect(result._meta?.["fixture/meta"]).toEqual({ kept: true });
  });

  it("ends, with every upstream it started, when stdin closes", async () => {
    raw = startRaw(config, path.join(temp.path, "cache"));
    await initialize(raw);
    await raw.request(50, "tools/list");
    const upstreams = pidsWithMarker(marker);
    expect(upstreams.length).toBeGreaterThanOrEqual(2);
    const pid = raw.child.pid!;
    const exited = new Promise<number | null>((resolve) => raw!.child.once("exit", (code) => resolve(code)));
    raw.child.stdin!.end();
    expect(await exited).toBe(0);
    expect(isAlive(pid)).toBe(false);
    await expect.poll(() => upstreams.filter(isAlive), { timeout: 15_000 }).toEqual([]);
  });
});

describe("abridge serve over HTTP: what upstreams send back during a call", () => {
  const temp = useTempDir();
  let marker: string;
  let serve: HttpServeProcess | undefined;
  const clients: Client[] = [];

  beforeEach(async () => {
    marker = `protocol-http-${randomUUID()}`;
    const config = await writeConfig(temp.path, fixtureServerToml("conf", "conformanceServer.ts", ["--marker", marker], "prefix = false"));
    serve = await serveOverHttp(config, ["--cache-dir", path.join(temp.path, "cache"), "--no-watch", "--mode", "full"]);
  });

  afterEach(async () => {
    await Promise.allSettled(clients.map((c) => c.close()));
    clients.length = 0;
    await serve?.stop();
    serve = undefined;
    killAll(pidsWithMarker(marker));
  });

  async function connect(name: string, capabilities: ClientCapabilities = { sampling: {}, elicitation: {} }): Promise<Client> {
    const client = new Client({ name, version: "1.0.0" }, { capabilities });
    await client.connect(new StreamableHTTPClientTransport(new URL(serve!.url)));
    clients.push(client);
    return client;
  }

  function textOf(result: unknown): string {
    const content = (result as CallToolResult).content;
    return content.map((c) => (c.type === "text" ? c.text : `[${c.type}]`)).join("\n");
  }

  it("declares what the upstreams support, relays sampling and elicitation to the caller and the answers back", async () => {
    const client = await connect("relay");
    expect(client.getServerCapabilities()).toMatchObject({ logging: {}, completions: {}, resources: { subscribe: true }, tools: {}, prompts: {} });
    const seen: string[] = [];
    client.setRequestHandler(CreateMessageRequestSchema, (request) => {
      const first = request.params.messages[0]?.content;
      seen.push(`sampling:${first && "text" in first ? String(first.text) : ""}`);
      return { role: "assistant", content: { type: "text", text: "forty-two" }, model: "test-model", stopReason: "endTurn" };
    });
    client.setRequestHandler(ElicitRequestSchema, (request) => {
      seen.push(`elicit:${request.params.message}`);
      return { action: "accept", content: { username: "ada", email: "ada@example.com" } };
    });
    const sampled = await client.callTool({ name: "test_sampling", arguments: { prompt: "the answer?" } });
    expect(textOf(sampled)).toBe("LLM response: forty-two");
    const elicited = await client.callTool({ name: "test_elicitation", arguments: { message: "who are you?" } });
    expect(textOf(elicited)).toBe('Elicitation completed: action=accept, content={"username":"ada","email":"ada@example.com"}');
    expect(seen).toEqual(["sampling:the answer?", "elicit:who are you?"]);
  });

  it("relays an upstream's roots/list to the calling client, and refuses it at once for a client without roots", async () => {
    const client = await connect("roots", { roots: {} });
    let asked = 0;
    client.setRequestHandler(ListRootsRequestSchema, () => {
      asked += 1;
      return { roots: [{ uri: "file:///work/project", name: "project" }] };
    });
    const listed = await client.callTool({ name: "test_input_required_result_list_roots", arguments: {} });
    expect(textOf(listed)).toBe("Roots: file:///work/project");
    expect(asked).toBe(1);

    // A client that declared no roots is not asked: the upstream gets an error, not a wait.
    const without = await connect("no-roots");
    const refused = await without.callTool({ name: "test_input_required_result_list_roots", arguments: {} });
    expect((refused as CallToolResult).isError).toBe(true);
    expect(textOf(refused)).toContain("does not support roots/list");
  });

  it("relays an upstream's elicitation during prompts/get to the client that asked for the prompt", async () => {
    const client = await connect("prompt");
    const seen: string[] = [];
    client.setRequestHandler(ElicitRequestSchema, (request) => {
      seen.push(request.params.message);
      return { action: "accept", content: { context: "the release notes" } };
    });
    const prompt = await client.getPrompt({ name: "test_input_required_result_prompt" });
    expect(prompt.messages).toEqual([{ role: "user", content: { type: "text", text: "Use this context: the release notes" } }]);
    expect(seen).toEqual(["What context should the prompt use?"]);

    // A client that cannot elicit is refused at once, and the prompt comes without the context.
    const plain = await connect("plain", {});
    const bare = await plain.getPrompt({ name: "test_input_required_result_prompt" });
    expect(bare.messages).toEqual([{ role: "user", content: { type: "text", text: "Use this context: (none given)" } }]);
  });

  it("refuses an upstream request made while two clients' calls overlap rather than ask the wrong client", async () => {
    const a = await connect("a");
    const b = await connect("b");
    const seenByA: string[] = [];
    const seenByB: string[] = [];
    let bResult: unknown;
    b.setRequestHandler(ElicitRequestSchema, (request) => {
      seenByB.push(request.params.message);
      return { action: "decline" };
    });
    a.setRequestHandler(ElicitRequestSchema, async (request) => {
      seenByA.push(request.params.message);
      // A's call is still open here; B's call overlaps it on the same upstream.
      bResult = await b.callTool({ name: "test_elicitation", arguments: { message: "for B" } });
      return { action: "accept", content: { username: "a", email: "a@example.com" } };
    });
    const aResult = await a.callTool({ name: "test_elicitation", arguments: { message: "for A" } });
    expect(textOf(aResult)).toContain("action=accept");
    expect(seenByA).toEqual(["for A"]);
    expect(seenByB).toEqual([]);
    expect((bResult as CallToolResult).isError).toBe(true);
    expect(textOf(bResult)).toContain("several clients");

    // Once the calls no longer overlap, B is asked as usual.
    const alone = await b.callTool({ name: "test_elicitation", arguments: { message: "B alone" } });
    expect(textOf(alone)).toContain("action=decline");
    expect(seenByB).toEqual(["B alone"]);
  });

  it("sends a call's log lines to its client, filtered by that client's logging/setLevel", async () => {
    const client = await connect("logs");
    const other = await connect("other");
    const logs: string[] = [];
    const otherLogs: string[] = [];
    client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void logs.push(`${n.params.level}:${String(n.params.data)}`));
    other.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void otherLogs.push(String(n.params.data)));
    await client.setLoggingLevel("warning");
    await client.callTool({ name: "test_log", arguments: { level: "info", message: "too quiet" } });
    await client.callTool({ name: "test_log", arguments: { level: "error", message: "loud enough" } });
    await expect.poll(() => logs).toEqual(["error:loud enough"]);

    await client.setLoggingLevel("debug");
    await client.callTool({ name: "test_tool_with_logging", arguments: {} });
    await expect.poll(() => logs.length).toBe(4);
    expect(logs.slice(1)).toEqual(["info:Tool execution started", "info:Tool processing data", "info:Tool execution completed"]);
    expect(otherLogs).toEqual([]);
  });

  it("routes subscriptions to the owner, counts them across clients, forwards resources/updated to subscribers, and completes arguments", async () => {
    const a = await connect("sub-a");
    const b = await connect("sub-b");
    const updatesA: string[] = [];
    const updatesB: string[] = [];
    a.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => void updatesA.push(n.params.uri));
    b.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => void updatesB.push(n.params.uri));
    const uri = "test://watched-resource";

    await a.subscribeResource({ uri });
    await a.callTool({ name: "test_update_resource", arguments: { uri } });
    await expect.poll(() => updatesA).toEqual([uri]);

    await b.subscribeResource({ uri });
    await a.unsubscribeResource({ uri });
    // B still holds a subscription, so the upstream keeps it and B hears the update.
    const stillSubscribed = await a.callTool({ name: "test_update_resource", arguments: { uri } });
    expect((stillSubscribed as CallToolResult).isError).toBeUndefined();
    await expect.poll(() => updatesB).toEqual([uri]);
    expect(updatesA).toEqual([uri]);

    await b.unsubscribeResource({ uri });
    const gone = await b.callTool({ name: "test_update_resource", arguments: { uri } });
    expect(textOf(gone)).toBe(`not subscribed: ${uri}`);

    const prompt = await a.complete({ ref: { type: "ref/prompt", name: "test_prompt_with_arguments" }, argument: { name: "arg1", value: "pa" } });
    expect(prompt.completion.values).toEqual(["paris", "park", "party"]);
    const template = await a.complete({ ref: { type: "ref/resource", uri: "test://template/{id}/data" }, argument: { name: "id", value: "12" } });
    expect(template.completion.values).toEqual(["123", "124"]);
    await expect(a.complete({ ref: { type: "ref/prompt", name: "no_such_prompt" }, argument: { name: "x", value: "" } })).rejects.toThrow(/-32602/);
  });
});
