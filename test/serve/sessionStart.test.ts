/**
 * Nothing reaches a client of `abridge serve` unasked before its session has begun (`initialize`
 * answered, then `notifications/initialized`), and a list it has not asked for yet has not changed
 * for it: upstreams coming up before either say nothing to it, and a change to a list it listed
 * early waits for `initialized`. Once it has listed, real changes are announced. Over stdio with a
 * raw child process, over streamable HTTP on the session's GET stream. Upstreams that come up at
 * a moment the test picks wait for a gate file.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { once } from "node:events";
import { writeFile } from "node:fs/promises";
import http from "node:http";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { fixtureServerToml, waitForNoMarkedPids, writeConfig } from "../helpers/cliHarness.js";
import { MessageLog } from "../helpers/messageLog.js";
import { fixtureCommand, killAll } from "../helpers/processes.js";
import { BIN } from "../helpers/serveHarness.js";
import { useTempDir } from "../helpers/tempDir.js";

type Message = Record<string, unknown> & { id?: unknown; method?: string; result?: Record<string, unknown> };

const VERSION = "2025-06-18";
const INITIALIZE = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: VERSION, capabilities: {}, clientInfo: { name: "raw", version: "1" } },
};
/** Fixtures under tsx start slowly on a loaded machine; a gated one waits for the test too. */
const SLOW_START = "connect_timeout_ms = 120000";
/**
 * The config's head: lists do not wait for a server the test keeps gated (every other server is
 * up before the client lists), and summaries change no list.
 */
const HEAD = 'mode = "full"\nstartup_grace_ms = 0\n';

/**
 * A stdio server running the resource fixture (resources, prompts and one tool) once `gate`
 * exists: it comes up when the test says so.
 */
function gatedResourceServerToml(name: string, gate: string, marker: string): string {
  const { command, args } = fixtureCommand("resourceServer.ts", ["--marker", marker]);
  const run = [command, ...args].map((word) => `'${word}'`).join(" ");
  const script = `while [ ! -e '${gate}' ]; do sleep 0.05; done; exec ${run}`;
  return `${[`[servers.${name}]`, `command = "sh"`, `args = ${JSON.stringify(["-c", script, marker])}`, SLOW_START].join("\n")}\n`;
}

/** `abridge serve` as a child: its stdout as JSON-RPC lines (stdio only) and its stderr, waited on together. */
class ServeChild {
  private readonly log: MessageLog<Message>;
  readonly messages: Message[];
  private buffer = "";
  private stderrText = "";

  constructor(readonly child: ChildProcess) {
    this.log = new MessageLog<Message>(() => `\nstderr: ${this.stderrText.slice(-3000)}`);
    this.messages = this.log.messages;
    child.stdout?.setEncoding("utf8");
    child.stdout?.on("data", (chunk: string) => {
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

  until<T>(test: () => T | undefined, what: string): Promise<T> {
    return this.log.until(test, what, 120_000);
  }

  /** Waits for serve's log line saying `server` is up (its tools listed, its state `ready`). */
  ready(server: string): Promise<true> {
    return this.until(() => (new RegExp(`upstream ready server=${server} `).test(this.stderrText) ? true : undefined), `upstream ${server} to be ready`);
  }

  send(message: Message): void {
    this.child.stdin!.write(`${JSON.stringify(message)}\n`);
  }

  response(id: number): Promise<Message> {
    return this.until(() => this.messages.find((m) => m.id === id && m.method === undefined), `the response to ${id}`);
  }

  request(id: number, method: string, params?: Record<string, unknown>): Promise<Message> {
    this.send({ jsonrpc: "2.0", id, method, ...(params ? { params } : {}) });
    return this.response(id);
  }

  /** Methods of the notifications read so far. */
  notifications(): string[] {
    return this.messages.flatMap((m) => (m.method !== undefined && m.id === undefined ? [m.method] : []));
  }

  stderr(): string {
    return this.stderrText;
  }
}

function spawnServe(config: string, dir: string, extra: string[] = []): ServeChild {
  const child = spawn(
    process.execPath,
    ["--import", "tsx", BIN, "serve", "--config", config, "--cache-dir", path.join(dir, "cache"), "--no-watch", "--log-level", "debug", ...extra],
    { env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "" }, stdio: ["pipe", extra.includes("--http") ? "ignore" : "pipe", "pipe"] },
  );
  return new ServeChild(child);
}

describe("nothing is sent to a client before its session has begun", () => {
  const temp = useTempDir();
  let marker: string;
  let serve: ServeChild | undefined;

  beforeEach(async () => {
    marker = `session-start-${randomUUID()}`;
  });

  afterEach(async () => {
    const child = serve?.child;
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = once(child, "exit");
      child.kill("SIGTERM");
      await exited;
    }
    serve = undefined;
    killAll(await waitForNoMarkedPids(marker));
  });

  it("over stdio: silent until initialize, answers it first, holds back until initialized, then announces changes of lists the client has seen", async () => {
    const gate = (name: string): string => path.join(temp.path, `gate-${name}`);
    const config = await writeConfig(
      temp.path,
      HEAD +
        fixtureServerToml("lc", "listChangedServer.ts", ["--marker", marker], SLOW_START) +
        fixtureServerToml("res", "resourceServer.ts", ["--marker", marker], SLOW_START) +
        fixtureServerToml("late", "lateServer.ts", ["--gate", gate("late"), "--marker", marker], SLOW_START) +
        gatedResourceServerToml("early", gate("early"), marker) +
        gatedResourceServerToml("after", gate("after"), marker),
    );
    serve = spawnServe(config, temp.path);

    // stdin open, nothing sent: the upstreams come up, one of them (with resources and prompts)
    // at once, one late.
    await serve.ready("lc");
    await serve.ready("res");
    await writeFile(gate("late"), "");
    await serve.ready("late");
    expect(serve.messages).toEqual([]);
    // Anything sent for the upstreams above was written to stdout before initialize was read:
    // the initialize answer is behind it on the same pipe.
    serve.send(INITIALIZE);
    const init = await serve.response(1);
    expect(init.result).toMatchObject({ serverInfo: { name: "abridge" }, capabilities: { tools: { listChanged: true }, resources: { listChanged: true } } });
    expect(serve.messages[0]).toBe(init);

    // Between initialize and initialized, the client lists the prompts (not the resources), and
    // a server with resources and prompts comes up: nothing is sent yet.
    const promptsBefore = ((await serve.request(2, "prompts/list")).result!.prompts as { name: string }[]).map((p) => p.name);
    expect(promptsBefore.some((name) => name.startsWith("early"))).toBe(false);
    await writeFile(gate("early"), "");
    await serve.ready("early");
    await serve.request(3, "ping");
    expect(serve.messages.map((m) => m.id)).toEqual([1, 2, 3]);
    // Once initialized, the client hears of the change to the list it has seen, and only of it.
    serve.send({ jsonrpc: "2.0", method: "notifications/initialized" });
    await serve.until(() => (serve!.notifications().length > 0 ? true : undefined), "the held prompts/list_changed");
    await serve.request(4, "ping");
    expect(serve.notifications()).toEqual(["notifications/prompts/list_changed"]);

    // The first lists hold everything that came up before them.
    const tools = ((await serve.request(5, "tools/list")).result!.tools as { name: string }[]).map((t) => t.name);
    expect(tools).toEqual(expect.arrayContaining(["lc_add_tool", "res_noop", "late_echo", "early_noop"]));
    const prompts = ((await serve.request(6, "prompts/list")).result!.prompts as { name: string }[]).map((p) => p.name);
    expect(prompts.some((name) => name.startsWith("early"))).toBe(true);
    const resources = ((await serve.request(7, "resources/list")).result!.resources as { name: string }[]).map((r) => r.name);
    expect(resources.some((name) => name.startsWith("early"))).toBe(true);

    // A real change of the tools: announced once.
    expect((await serve.request(8, "tools/call", { name: "lc_add_tool", arguments: { name: "fresh" } })).result).toMatchObject({
      content: [{ text: "added fresh" }],
    });
    await serve.until(() => (serve!.notifications().includes("notifications/tools/list_changed") ? true : undefined), "tools/list_changed");
    await serve.request(9, "ping");
    expect(serve.notifications()).toEqual(["notifications/prompts/list_changed", "notifications/tools/list_changed"]);
    const relisted = ((await serve.request(10, "tools/list")).result!.tools as { name: string }[]).map((t) => t.name);
    expect(relisted).toContain("lc_fresh");

    // A server with resources and prompts coming up now changes lists the client has seen.
    const seen = serve.notifications().length;
    await writeFile(gate("after"), "");
    const fresh = (): string[] => serve!.notifications().slice(seen);
    await serve.until(
      () => (["notifications/resources/list_changed", "notifications/prompts/list_changed"].every((m) => fresh().includes(m)) ? true : undefined),
      "resources and prompts list_changed",
    );

    const exited = once(serve.child, "exit");
    serve.child.stdin!.end();
    expect((await exited)[0]).toBe(0);
  }, 240_000);

  it("over HTTP: the session's GET stream carries nothing from before initialized, then real changes", async () => {
    const gate = path.join(temp.path, "gate-early");
    const config = await writeConfig(
      temp.path,
      HEAD +
        fixtureServerToml("lc", "listChangedServer.ts", ["--marker", marker], SLOW_START) +
        fixtureServerToml("res", "resourceServer.ts", ["--marker", marker], SLOW_START) +
        gatedResourceServerToml("early", gate, marker),
    );
    serve = spawnServe(config, temp.path, ["--http", "127.0.0.1:0"]);
    const url = await serve.until(() => /at (http:\/\/127\.0\.0\.1:\d+\/mcp)/.exec(serve!.stderr())?.[1], "the HTTP URL");
    await serve.ready("lc");
    await serve.ready("res");

    const init = await post(url, {}, INITIALIZE);
    expect(init.status).toBe(200);
    expect(JSON.parse(init.text)).toMatchObject({ id: 1, result: { serverInfo: { name: "abridge" } } });
    const headers = { "mcp-session-id": String(init.headers["mcp-session-id"]), "mcp-protocol-version": VERSION };

    // The GET stream is open before initialized, while a server with resources and prompts comes up.
    const streamed = new MessageLog<Message>(() => `\nstderr: ${serve!.stderr().slice(-3000)}`);
    const stream = openStream(url, headers, (message) => {
      streamed.messages.push(message);
      streamed.wake();
    });
    try {
      expect(await stream.status).toBe(200);
      await writeFile(gate, "");
      await serve.ready("early");
      expect((await post(url, headers, { jsonrpc: "2.0", method: "notifications/initialized" })).status).toBe(202);

      const listed = await post(url, headers, { jsonrpc: "2.0", id: 2, method: "tools/list" });
      expect(listed.text).toContain("early_noop");
      const added = await post(url, headers, { jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "lc_add_tool", arguments: { name: "fresh" } } });
      expect(added.status).toBe(200);
      // The change after listing reaches the stream, and nothing came before it.
      await streamed.until(() => (streamed.messages.length > 0 ? true : undefined), "a message on the GET stream", 120_000);
      expect(streamed.messages[0]).toMatchObject({ method: "notifications/tools/list_changed" });
    } finally {
      stream.req.destroy();
    }
  }, 240_000);
});

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
}

/** One POST on a socket of its own. */
function post(url: string, headers: Record<string, string>, body: unknown): Promise<Answer> {
  return new Promise<Answer>((resolve, reject) => {
    const req = http.request(
      url,
      { method: "POST", agent: false, headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers } },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => (text += chunk));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(JSON.stringify(body));
  });
}

/** The session's GET stream: its status, and each JSON-RPC message it carries as it comes. */
function openStream(url: string, headers: Record<string, string>, onMessage: (message: Message) => void): { req: http.ClientRequest; status: Promise<number> } {
  let req!: http.ClientRequest;
  const status = new Promise<number>((resolve, reject) => {
    req = http.request(url, { method: "GET", agent: false, headers: { accept: "text/event-stream", ...headers } }, (res) => {
      resolve(res.statusCode ?? 0);
      let buffer = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        buffer += chunk;
        let newline: number;
        while ((newline = buffer.indexOf("\n")) !== -1) {
          const line = buffer.slice(0, newline);
          buffer = buffer.slice(newline + 1);
          if (line.startsWith("data:")) onMessage(JSON.parse(line.slice(5)) as Message);
        }
      });
      // Destroyed by the test while open: its end is expected.
      res.on("error", () => undefined);
    });
    req.on("error", reject);
    req.end();
  });
  return { req, status };
}
