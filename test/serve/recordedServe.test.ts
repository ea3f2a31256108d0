import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { readdirSync, readFileSync } from "node:fs";
import { copyFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { fixtureServerToml, runAbridge, TEST_STARTUP_GRACE, waitForNoMarkedPids, writeConfig } from "../helpers/cliHarness.js";
import { MessageLog } from "../helpers/messageLog.js";
import { killAll } from "../helpers/processes.js";
import { BIN, serveOverStdio, type ServeSession } from "../helpers/serveHarness.js";
import { useTempDir } from "../helpers/tempDir.js";

const CORPUS = path.resolve("bench/corpus/servers");

type Text = { type: string; text: string };

describe("abridge serve with a recorded server", () => {
  const temp = useTempDir({ marker: "recorded" });
  let config: string;
  let session: ServeSession | undefined;
  const github = JSON.parse(readFileSync(path.join(CORPUS, "github.json"), "utf8")) as { tools: { name: string; description: string; inputSchema: unknown }[] };
  beforeEach(async () => {
    await copyFile(path.join(CORPUS, "github.json"), path.join(temp.path, "github.json"));
    // A live server beside it: a recorded server changes nothing for the others.
    config = await writeConfig(
      temp.path,
      [
        `cache_dir = "cache"`,
        `[servers.gh]\nrecorded = "github.json"\n`,
        fixtureServerToml("echo", "echoServer.ts", ["--tools", "0", "--name", temp.marker]),
      ].join("\n"),
    );
  });
  afterEach(async () => {
    await session?.close();
    session = undefined;
    expect(await waitForNoMarkedPids(temp.marker)).toEqual([]);
  });

  it("lists its tools, hands out their full schemas, and refuses a call with UPSTREAM_RECORDED", async () => {
    session = await serveOverStdio(config, ["--mode", "compact"]);
    const { tools } = await session.client.listTools();
    const names = tools.map((t) => t.name);
    for (const tool of github.tools) expect(names).toContain(`gh_${tool.name}`);
    expect(names).toContain("echo_echo");
    expect(names).toContain("get_schema");

    const schema = await session.client.callTool({ name: "get_schema", arguments: { tool: "gh_create_issue" } });
    expect(schema.isError).toBeFalsy();
    const original = github.tools.find((t) => t.name === "create_issue")!;
    const parsed = JSON.parse((schema.content as Text[])[0]!.text) as { server: string; description: string; inputSchema: unknown };
    expect(parsed.server).toBe("gh");
    expect(parsed.description).toBe(original.description);
    expect(parsed.inputSchema).toEqual(original.inputSchema);

    const call = await session.client.callTool({ name: "gh_create_issue", arguments: { owner: "o", repo: "r", title: "t" } });
    expect(call.isError).toBe(true);
    const text = (call.content as Text[])[0]!.text;
    expect(text).toContain("gh is a recorded server");
    expect(text).toContain("github.json");
    expect(text).toContain("cannot run them");
    expect(text).toContain("[UPSTREAM_RECORDED]");
    expect(call._meta).toEqual({ "abridge/error": { code: "UPSTREAM_RECORDED", retryable: false } });

    // The live server beside it still answers.
    const echo = await session.client.callTool({ name: "echo_echo", arguments: { text: "still here" } });
    expect(echo.isError).toBeFalsy();
    expect(JSON.stringify(echo.content)).toContain("still here");
  }, 60_000);

  it("lazy: search_tools finds recorded tools in the order `abridge search` prints, and call_tool is refused", async () => {
    // Summaries first, so serve and the CLI rank the same cached text (serve would otherwise be
    // summarizing in the background while it answers).
    const warm = await runAbridge(["summarize", "warm", "--server", "gh", "--config", config], { cwd: temp.path });
    expect(warm.code, warm.stderr).toBe(0);
    session = await serveOverStdio(config, ["--mode", "lazy"]);
    const query = "list pull requests of a repository";
    const searched = await session.client.callTool({ name: "search_tools", arguments: { query, limit: 5 } });
    const lines = (searched.content as Text[])[0]!.text.split("\n");
    const fromServe = lines.map((line) => /^([A-Za-z0-9_-]+)\(/.exec(line)?.[1]);
    expect(fromServe[0]).toBe("gh_list_pull_requests");

    const cli = await runAbridge(["search", query, "--limit", "5", "--json", "--config", config], { cwd: temp.path });
    expect(cli.code, cli.stderr).toBe(0);
    expect((JSON.parse(cli.stdout) as { name: string }[]).map((r) => r.name)).toEqual(fromServe);

    const call = await session.client.callTool({ name: "call_tool", arguments: { tool: "gh_list_pull_requests", arguments: { owner: "o", repo: "r" } } });
    expect(call.isError).toBe(true);
    expect((call.content as Text[])[0]!.text).toContain("[UPSTREAM_RECORDED]");
  }, 60_000);

  it("`servers` shows it as recorded and ready, with the file's serverInfo", async () => {
    await writeFile(
      path.join(temp.path, "small.json"),
      JSON.stringify({ serverInfo: { name: "small", version: "2.0.0" }, tools: [{ name: "ping", inputSchema: { type: "object" } }] }),
    );
    const small = await writeConfig(temp.path, `[servers.small]\nrecorded = "small.json"\n`);
    const r = await runAbridge(["servers", "--json", "--config", small], { cwd: temp.path });
    expect(r.code, r.stderr).toBe(0);
    const [status] = JSON.parse(r.stdout) as { name: string; transport: string; state: string; toolCount: number; serverInfo: unknown }[];
    expect(status).toMatchObject({ name: "small", transport: "recorded", state: "ready", toolCount: 1, serverInfo: { name: "small", version: "2.0.0" } });
  });
});

type Message = Record<string, unknown> & { id?: unknown; method?: string; result?: Record<string, unknown> };

/** `abridge serve` over stdio as a raw child: JSON-RPC lines written and read by the test, its stderr, its exit. */
class RawServe {
  private readonly log: MessageLog<Message>;
  private buffer = "";
  private stderrText = "";
  readonly exited: Promise<[number | null, NodeJS.Signals | null]>;

  constructor(readonly child: ChildProcess) {
    this.log = new MessageLog<Message>(() => `\nstderr: ${this.stderrText.slice(-3000)}`);
    this.exited = once(child, "exit") as Promise<[number | null, NodeJS.Signals | null]>;
    child.stdout!.setEncoding("utf8");
    child.stdout!.on("data", (chunk: string) => {
      this.buffer += chunk;
      let newline: number;
      while ((newline = this.buffer.indexOf("\n")) !== -1) {
        const line = this.buffer.slice(0, newline).trim();
        this.buffer = this.buffer.slice(newline + 1);
        if (line) this.log.messages.push(JSON.parse(line) as Message);
      }
      this.log.wake();
    });
    child.stderr!.setEncoding("utf8");
    child.stderr!.on("data", (chunk: string) => {
      this.stderrText += chunk;
      this.log.wake();
    });
  }

  static start(config: string): RawServe {
    const child = spawn(process.execPath, ["--import", "tsx", BIN, "serve", "--config", config], {
      env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "" },
      stdio: ["pipe", "pipe", "pipe"],
    });
    return new RawServe(child);
  }

  send(message: Message): void {
    this.child.stdin!.write(`${JSON.stringify(message)}\n`);
  }

  /** Sends a request and waits for its answer. */
  request(id: number, method: string, params?: Record<string, unknown>): Promise<Message> {
    this.send({ jsonrpc: "2.0", id, method, ...(params ? { params } : {}) });
    return this.log.until(() => this.log.messages.find((m) => m.id === id && m.method === undefined), `the answer to ${method} (${id})`, 120_000);
  }

  /** initialize, then notifications/initialized: the session a client opens. */
  async initialize(): Promise<void> {
    await this.request(1, "initialize", { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } });
    this.send({ jsonrpc: "2.0", method: "notifications/initialized" });
  }

  /** Waits until stderr holds `text`. */
  stderrHas(text: string): Promise<true> {
    return this.log.until(() => (this.stderrText.includes(text) ? true : undefined), `stderr to say ${JSON.stringify(text)}`, 120_000);
  }

  stderr(): string {
    return this.stderrText;
  }

  /** Ends the child if a test left it running. */
  async kill(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.child.kill("SIGKILL");
    await this.exited;
  }
}

describe("abridge serve: recorded files that are no regular file, and many recorded servers", () => {
  const temp = useTempDir({ marker: "recorded-raw" });
  let serve: RawServe | undefined;
  afterEach(async () => {
    await serve?.kill();
    serve = undefined;
    killAll(await waitForNoMarkedPids(temp.marker));
  });

  it("a FIFO as recorded file is reported by name; the other servers serve, and stdin EOF ends serve", async () => {
    // Four: as many as libuv's threads for file operations, which an open that waits for a
    // writer would each hold for good.
    const fifos = [1, 2, 3, 4].map((i) => path.join(temp.path, `pipe${i}.json`));
    for (const fifo of fifos) execFileSync("mkfifo", [fifo]);
    const config = await writeConfig(
      temp.path,
      [
        `cache_dir = "cache"`,
        ...fifos.map((fifo, i) => `[servers.pipe${i + 1}]\nrecorded = ${JSON.stringify(fifo)}\n`),
        fixtureServerToml("echo", "echoServer.ts", ["--tools", "0", "--name", temp.marker]),
      ].join("\n"),
    );
    serve = RawServe.start(config);
    for (const [i, fifo] of fifos.entries()) {
      await serve.stderrHas(`servers.pipe${i + 1}.recorded: ${fifo}: it is a FIFO, not a regular file`);
    }
    expect(serve.stderr()).toContain("CONFIG_INVALID");
    await serve.initialize();
    const listed = await serve.request(2, "tools/list");
    const names = (listed.result!.tools as { name: string }[]).map((t) => t.name);
    expect(names).toContain("echo_echo");
    expect(names.some((n) => n.startsWith("pipe"))).toBe(false);
    const call = await serve.request(3, "tools/call", { name: "echo_echo", arguments: { text: "through" } });
    expect(JSON.stringify(call.result)).toContain("through");
    serve.child.stdin!.end();
    expect(await serve.exited).toEqual([0, null]);
  }, 180_000);

  it("lists all tools of 20 recorded servers in the first tools/list, sent right after initialize", async () => {
    const files = readdirSync(CORPUS)
      .filter((f) => f.endsWith(".json"))
      .sort()
      .slice(0, 20);
    let total = 0;
    const entries: string[] = [];
    for (const [i, file] of files.entries()) {
      await copyFile(path.join(CORPUS, file), path.join(temp.path, `s${i}.json`));
      total += (JSON.parse(readFileSync(path.join(CORPUS, file), "utf8")) as { tools: unknown[] }).tools.length;
      entries.push(`[servers.s${i}]\nrecorded = "s${i}.json"\n`);
    }
    // A grace longer than any load: a list that waits must wait for every recorded server.
    const config = await writeConfig(temp.path, [`cache_dir = "cache"`, TEST_STARTUP_GRACE, ...entries].join("\n"));
    serve = RawServe.start(config);
    await serve.initialize();
    const listed = await serve.request(2, "tools/list");
    const names = (listed.result!.tools as { name: string }[]).map((t) => t.name).filter((n) => n !== "get_schema");
    expect(names).toHaveLength(total);
    for (let i = 0; i < files.length; i++)
      expect(
        names.some((n) => n.startsWith(`s${i}_`)),
        `s${i}`,
      ).toBe(true);
    serve.child.stdin!.end();
    expect(await serve.exited).toEqual([0, null]);
  }, 180_000);
});
