/**
 * Starts `abridge serve` as a real child process (the CLI under tsx) and connects the SDK client
 * to it over stdio or streamable HTTP.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { Watch } from "./waitFor.js";

/** The CLI entry run from source. */
export const BIN = fileURLToPath(new URL("../../src/cli/bin.ts", import.meta.url));

/** A connected client and how to stop everything. */
export interface ServeSession {
  client: Client;
  /** Pid of the `abridge serve` process. */
  pid: number | undefined;
  /** stderr of the abridge process so far. */
  stderr(): string;
  /** Resolves once stderr contains `text` (or matches it), checked now and on each chunk serve writes. */
  untilStderr(text: string | RegExp, what: string, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

/** stderr as it is written, and waits on it. */
function stderrLog(): { append(chunk: Buffer): void; text(): string; until: ServeSession["untilStderr"] } {
  let text = "";
  const written = new Watch();
  return {
    append(chunk) {
      text += chunk.toString("utf8");
      written.changed();
    },
    text: () => text,
    until: (pattern, what, timeoutMs) =>
      written.until(() => (typeof pattern === "string" ? text.includes(pattern) : pattern.test(text)), {
        what,
        ...(timeoutMs !== undefined ? { timeoutMs } : {}),
        detail: () => `serve's stderr ends:\n${text.slice(-4_000)}`,
      }),
  };
}

/** Runs `abridge serve --config <config> ...args` over stdio and connects an SDK client. */
export async function serveOverStdio(config: string, args: string[] = [], env: Record<string, string> = {}): Promise<ServeSession> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: ["--import", "tsx", BIN, "serve", "--config", config, ...args],
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", ...env },
    stderr: "pipe",
  });
  const stderr = stderrLog();
  transport.stderr?.on("data", (b: Buffer) => stderr.append(b));
  const client = new Client({ name: "abridge-test", version: "1.0.0" });
  await client.connect(transport);
  return {
    client,
    pid: transport.pid ?? undefined,
    stderr: stderr.text,
    untilStderr: stderr.until,
    close: () => client.close(),
  };
}

/** A running `abridge serve --http` child and its URL. */
export interface HttpServeProcess {
  child: ChildProcess;
  url: string;
  stderr(): string;
  /** Resolves once stderr contains `text` (or matches it), checked now and on each chunk serve writes. */
  untilStderr(text: string | RegExp, what: string, timeoutMs?: number): Promise<void>;
  connect(headers?: Record<string, string>): Promise<Client>;
  stop(): Promise<void>;
}

/** Runs `abridge serve --http 127.0.0.1:0` (of `bin`: another checkout's CLI, to compare) and waits for the URL it prints. */
export async function serveOverHttp(config: string, args: string[] = [], env: Record<string, string> = {}, bin = BIN): Promise<HttpServeProcess> {
  const child = spawn(process.execPath, ["--import", "tsx", bin, "serve", "--config", config, "--http", "127.0.0.1:0", ...args], {
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", ...env },
    stdio: ["ignore", "ignore", "pipe"],
  });
  const stderr = stderrLog();
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`abridge serve --http did not start:\n${stderr.text()}`)), 30_000);
    child.stderr!.on("data", (b: Buffer) => {
      stderr.append(b);
      const match = /at (http:\/\/127\.0\.0\.1:\d+\/mcp)/.exec(stderr.text());
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`abridge serve exited with ${code}:\n${stderr.text()}`));
    });
  });
  const clients: Client[] = [];
  return {
    child,
    url,
    stderr: stderr.text,
    untilStderr: stderr.until,
    async connect(headers = {}) {
      const client = new Client({ name: "abridge-test", version: "1.0.0" });
      await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
      clients.push(client);
      return client;
    },
    async stop() {
      await Promise.allSettled(clients.map((c) => c.close()));
      if (child.exitCode === null) {
        const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
        child.kill("SIGTERM");
        await exited;
      }
    },
  };
}
