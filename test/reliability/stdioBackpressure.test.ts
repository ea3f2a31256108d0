/**
 * Write backpressure on the stdio front end. `send` added three listeners per write that met
 * backpressure: with 100k messages waiting (an upstream flooding notifications/message, or a
 * client pipelining requests and not reading), each drain walked them all, calls to healthy
 * servers timed out, RSS reached 3.4 GB, and once the client left, serve lived on as an orphan.
 * Now messages wait in one queue behind one drain listener, notifications past a bound are
 * dropped and counted (responses never), and stdin EOF ends serve however full the queue is.
 */
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { once } from "node:events";
import { describe, expect, it } from "vitest";
import { fixtureServerToml, pidsWithMarker, tempDir, writeConfig } from "../helpers/cliHarness.js";
import { BIN } from "../helpers/serveHarness.js";
import { cleanUpMarkedProcesses } from "../helpers/markedProcesses.js";
import { Watch, waitFor } from "../helpers/waitFor.js";

const { cleanups, markers } = cleanUpMarkedProcesses();

interface RawServe {
  child: ChildProcessWithoutNullStreams;
  marker: string;
  stderr(): string;
  send(message: Record<string, unknown>): void;
  /** Starts reading stdout (until then nothing is read); returns the messages read so far. */
  read(): Record<string, unknown>[];
  /** Resolves once `condition` holds, checked on each piece of output and at the exit. */
  until(condition: () => boolean, what: string, timeoutMs?: number): Promise<void>;
}

/** `abridge serve` over stdio with the hostile fixture, spoken to in raw lines, stdout unread. */
async function rawServe(logLevel = "info"): Promise<RawServe> {
  const { dir, cleanup } = await tempDir();
  const marker = `--backpressure-marker-${process.pid}-${Date.now()}-${Math.random().toString(36).slice(2)}`;
  markers.push(marker);
  const toml = ['mode = "full"', `cache_dir = ${JSON.stringify(`${dir}/cache`)}`, fixtureServerToml("hostile", "hostileServer.ts", [marker])].join("\n");
  const config = await writeConfig(dir, toml);
  const child = spawn(process.execPath, ["--import", "tsx", BIN, "serve", "--config", config, "--no-watch", "--log-level", logLevel], {
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "" },
    stdio: ["pipe", "pipe", "pipe"],
  });
  child.stdin.on("error", () => undefined);
  const output = new Watch();
  let stderr = "";
  child.stderr.on("data", (b: Buffer) => {
    stderr += b.toString("utf8");
    output.changed();
  });
  child.once("exit", () => output.changed());
  cleanups.push(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      // Ending stdin ends serve and its children; SIGKILL is the last resort (it would orphan them).
      child.stdin.end();
      const timer = setTimeout(() => child.kill("SIGKILL"), 20_000);
      await once(child, "exit");
      clearTimeout(timer);
    }
    await cleanup();
  });
  const messages: Record<string, unknown>[] = [];
  let reading = false;
  let buffer = "";
  const serve: RawServe = {
    child,
    marker,
    stderr: () => stderr,
    send: (message) => child.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", ...message })}\n`),
    read() {
      if (!reading) {
        reading = true;
        child.stdout.on("data", (b: Buffer) => {
          buffer += b.toString("utf8");
          let newline;
          while ((newline = buffer.indexOf("\n")) !== -1) {
            messages.push(JSON.parse(buffer.slice(0, newline)) as Record<string, unknown>);
            buffer = buffer.slice(newline + 1);
          }
          output.changed();
        });
      }
      return messages;
    },
    until: (condition, what, timeoutMs = 90_000) => output.until(condition, { what, timeoutMs, detail: () => `stderr:\n${stderr.slice(-2_000)}` }),
  };
  serve.send({ id: 0, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } } });
  serve.send({ method: "notifications/initialized" });
  return serve;
}

const FLOOD = 20_000;

describe("stdio front end under write backpressure", () => {
  it("an upstream floods notifications at a client that does not read: past the bound they are dropped and counted; a healthy call is answered", async () => {
    const serve = await rawServe();
    serve.send({ id: 1, method: "tools/call", params: { name: "hostile_log_flood", arguments: { count: FLOOD, bytes: 2_000 } } });
    await serve.until(() => serve.stderr().includes("client is not reading: dropping notifications"), "serve to start dropping notifications");
    serve.send({ id: 2, method: "tools/call", params: { name: "hostile_echo", arguments: { text: "healthy" } } });
    const messages = serve.read();
    await serve.until(() => messages.some((m) => m.id === 2), "the healthy call's answer");
    expect(messages.find((m) => m.id === 2)).toMatchObject({ result: { content: [{ type: "text", text: "healthy" }] } });
    expect(messages.filter((m) => m.id === 1)).toHaveLength(1);
    // Every notification was either delivered or counted as dropped.
    const logs = (): number => messages.filter((m) => m.method === "notifications/message").length;
    const droppedTotal = (): number =>
      Math.max(0, ...[...serve.stderr().matchAll(/notifications dropped while the client was not reading .*total=(\d+)/g)].map((m) => Number(m[1])));
    await serve.until(() => logs() + droppedTotal() === FLOOD, `delivered + dropped to add up to ${FLOOD}`);
    expect(droppedTotal()).toBeGreaterThan(0);
    expect(logs()).toBeGreaterThan(0);
  }, 240_000);

  it("a client pipelines 20,000 requests without reading: every one is answered once it reads", async () => {
    const serve = await rawServe();
    const count = 20_000;
    for (let id = 1; id <= count; id++) serve.send({ id, method: "tools/list" });
    const messages = serve.read();
    await serve.until(() => messages.filter((m) => m.id !== 0).length >= count, "every answer");
    const ids = messages.filter((m) => m.id !== 0).map((m) => m.id as number);
    expect(new Set(ids).size).toBe(count);
    expect(messages.every((m) => m.error === undefined)).toBe(true);
  }, 240_000);

  it("stdin EOF with a full queue: serve exits promptly and its children are gone", async () => {
    // debug: the fixture's stderr reaches the log, which tells when its flood has been sent.
    const serve = await rawServe("debug");
    for (let id = 2; id <= 2_000; id++) serve.send({ id, method: "tools/list" });
    serve.send({ id: 1, method: "tools/call", params: { name: "hostile_log_flood", arguments: { count: FLOOD, bytes: 2_000 } } });
    // 40 MB of notifications and 2,000 answers against a pipe that holds 64 KiB: the queue is full.
    await serve.until(() => serve.stderr().includes("log flood done"), "the fixture to send its whole flood");
    serve.child.stdin.end();
    // stdout stays open and unread: the client is still there but said it is done.
    await serve.until(() => serve.child.exitCode !== null || serve.child.signalCode !== null, "serve to exit after stdin ended", 60_000);
    expect(serve.child.exitCode).toBe(0);
    await waitFor(() => pidsWithMarker(serve.marker).length === 0, { what: "the upstream child to be gone", timeoutMs: 20_000 });
  }, 240_000);
});
