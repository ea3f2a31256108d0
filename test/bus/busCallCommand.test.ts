/**
 * `abridge bus call` and the requester with no worker on the bus: the bus quick start of docs/fleet.md run
 * line by line (a real nats-server, two `abridge bus` workers, the call), and a call to a bus
 * where nothing listens failing with `unavailable` at once instead of waiting out its timeout.
 */
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { chmod, mkdir, readFile, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BusCallError, BusClient } from "../../src/index.js";
import { abridgeCommand } from "../helpers/abridgeCommand.js";
import { runAbridge, waitForNoMarkedPids, writeConfig } from "../helpers/cliHarness.js";
import { freePort, startNatsServer, type NatsServer } from "../helpers/natsServer.js";
import { killAll } from "../helpers/processes.js";
import { useTempDir } from "../helpers/tempDir.js";
import { messageOf } from "../../src/model/errors.js";

const require = createRequire(import.meta.url);
const everythingBin = require.resolve("@modelcontextprotocol/server-everything/dist/index.js");

/** Far above each test's own limit: a test that passes cannot have waited this out. */
const LONG_TIMEOUT_MS = 60_000;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `command args` to its end (a hang guard kills it). */
function run(command: string, args: readonly string[], env: NodeJS.ProcessEnv = process.env): Promise<Run> {
  return new Promise((resolve, reject) => {
    execFile(command, args, { env, timeout: 50_000 }, (err, stdout, stderr) => {
      if (err !== null && typeof err.code !== "number") reject(Object.assign(err, { stderr }));
      else resolve({ code: err === null ? 0 : (err.code as number), stdout, stderr });
    });
  });
}

describe("a bus where no worker listens", () => {
  let nats: NatsServer;

  beforeAll(async () => {
    nats = await startNatsServer();
  }, 30_000);

  afterAll(async () => {
    await nats?.stop();
  });

  it("fails a call and a list with unavailable (retryable) at once, long before the requester's 60 s timeout", { timeout: 15_000 }, async () => {
    const client = await BusClient.connect({ nats: nats.url, timeoutMs: LONG_TIMEOUT_MS });
    try {
      const called = await client.callTool("alpha", "everything_echo", { message: "hi" }, { timeoutMs: LONG_TIMEOUT_MS }).catch((err: unknown) => err);
      expect(called).toBeInstanceOf(BusCallError);
      expect(called).toMatchObject({ code: "BUS_CALL_FAILED", busCode: "unavailable", retryable: true, origin: "client", worker: undefined });
      expect(messageOf(called)).toContain("no worker of agent alpha is on the bus");

      const listed = await client.listTools("alpha", { timeoutMs: LONG_TIMEOUT_MS }).catch((err: unknown) => err);
      expect(listed).toBeInstanceOf(BusCallError);
      expect(listed).toMatchObject({ busCode: "unavailable", retryable: true, origin: "client" });
    } finally {
      await client.close();
    }
  });

  it("abridge bus call prints the bus code and exits 1 without waiting out --timeout-ms", { timeout: 40_000 }, async () => {
    const { command, args } = abridgeCommand([
      "bus",
      "call",
      "--nats",
      nats.url,
      "--agent",
      "alpha",
      "--timeout-ms",
      String(LONG_TIMEOUT_MS),
      "everything_echo",
      '{"message":"hi"}',
    ]);
    const result = await run(command, args);
    expect(result.stdout).toBe("");
    expect(result.stderr).toContain("bus error unavailable (retryable): no worker of agent alpha is on the bus");
    expect(result.stderr).toContain("[BUS_CALL_FAILED]");
    expect(result.code).toBe(1);
  });

  it("refuses a bad command line before connecting (exit 2)", async () => {
    const noNats = await runAbridge(["bus", "call", "--agent", "alpha", "everything_echo"]);
    expect(noNats).toMatchObject({ code: 2, stdout: "" });
    expect(noNats.stderr).toContain("--nats URL is required");
    const badAgent = await runAbridge(["bus", "call", "--nats", nats.url, "--agent", "a.b", "everything_echo"]);
    expect(badAgent.code).toBe(2);
    expect(badAgent.stderr).toContain("--agent:");
    const badArgs = await runAbridge(["bus", "call", "--nats", nats.url, "--agent", "alpha", "everything_echo", "[1]"]);
    expect(badArgs.code).toBe(2);
    expect(badArgs.stderr).toContain("expected a JSON object, got an array");
    const noTool = await runAbridge(["bus", "call", "--nats", nats.url, "--agent", "alpha"]);
    expect(noTool.code).toBe(2);
    expect(noTool.stderr).toContain("expected 1 to 2 argument(s)");
  });
});

/** The bus quick start: the shell lines of the first `sh` block of "Bus worker (NATS)" in docs/fleet.md. */
async function quickStartLines(): Promise<string[]> {
  const fleet = await readFile(path.join(process.cwd(), "docs", "fleet.md"), "utf8");
  const section = fleet.slice(fleet.indexOf("## Bus worker (NATS)"));
  const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1];
  expect(block, "the bus quick start block").toBeDefined();
  return block!.split("\n").filter((line) => line.trim() !== "");
}

/** A line started in the background, once it printed what says it is ready. */
interface Background {
  child: ChildProcess;
  exited: Promise<number | null>;
}

/** Starts `line` (without its `&`) under bash and waits until its stderr matches `ready`. */
function startLine(line: string, env: NodeJS.ProcessEnv, ready: RegExp): Promise<Background> {
  const child = spawn("bash", ["-c", `exec ${line}`], { env, stdio: ["ignore", "ignore", "pipe"] });
  const exited = new Promise<number | null>((resolve) => child.once("close", (code) => resolve(code)));
  let stderr = "";
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`not ready (a hang guard): ${line}\n${stderr}`)), 60_000);
    child.stderr!.on("data", (b: Buffer) => {
      stderr += b.toString("utf8");
      if (ready.test(stderr)) {
        clearTimeout(timer);
        resolve({ child, exited });
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${code} before it was ready: ${line}\n${stderr}`));
    });
  });
}

describe("the bus quick start of docs/fleet.md", () => {
  const temp = useTempDir({ prefix: "abridge-bus-quick-start-", scope: "all" });
  const started: Background[] = [];
  const marker = `bus-quick-start-${process.pid}`;

  afterAll(async () => {
    // The workers first (SIGTERM: they end their upstreams), then the NATS server.
    for (const background of started.reverse()) {
      if (background.child.exitCode === null && background.child.signalCode === null) background.child.kill("SIGTERM");
      await background.exited;
    }
    const left = await waitForNoMarkedPids(marker);
    killAll(left);
    expect(left, "upstreams left behind").toEqual([]);
  });

  it("runs as written, with only the port and the config path changed", { timeout: 150_000 }, async () => {
    const lines = await quickStartLines();
    expect(lines.at(-1)).toMatch(/^abridge bus call /);
    const config = await writeConfig(
      temp.path,
      `${[
        `cache_dir = "cache"`,
        `state_dir = "state"`,
        `[servers.everything]`,
        `command = ${JSON.stringify(process.execPath)}`,
        `args = ${JSON.stringify([everythingBin, "stdio", marker])}`,
      ].join("\n")}\n`,
    );
    // `abridge` on the PATH as an installed one would be: the CLI of this checkout.
    const bin = path.join(temp.path, "bin");
    const { command, args } = abridgeCommand([]);
    await mkdir(bin);
    await writeFile(path.join(bin, "abridge"), `#!/bin/sh\nexec ${[command, ...args].map((a) => `'${a}'`).join(" ")} "$@"\n`);
    await chmod(path.join(bin, "abridge"), 0o755);
    const env = { PATH: `${bin}:${process.env.PATH ?? ""}`, HOME: process.env.HOME ?? "" };

    // The port may be taken between finding it free and nats-server binding it: then another.
    let port = await freePort();
    const substitute = (line: string): string => line.replaceAll("4222", String(port)).replaceAll("abridge.toml", config);
    const [server, ...rest] = lines;
    expect(server).toMatch(/^nats-server .* &$/);
    for (let attempt = 0; ; attempt++) {
      try {
        started.push(await startLine(substitute(server!).replace(/\s*&$/, ""), env, /Server is ready/));
        break;
      } catch (err) {
        if (attempt >= 3) throw err;
        port = await freePort();
      }
    }

    const workers = rest.filter((line) => line.endsWith("&"));
    expect(workers).toHaveLength(2);
    for (const line of workers) {
      expect(line).toMatch(/^abridge bus /);
      started.push(await startLine(substitute(line).replace(/\s*&$/, ""), env, /abridge bus: agent alpha, .* worker \S+ on nats:/));
    }

    const call = await run("bash", ["-c", substitute(lines.at(-1)!)], env);
    expect(call.stderr).toBe("");
    expect(call.code).toBe(0);
    const result = JSON.parse(call.stdout) as { content: { type: string; text: string }[]; isError?: boolean };
    expect(result.isError).toBeUndefined();
    expect(result.content.map((c) => c.text).join("\n")).toContain("Echo: hi");

    // An agent without workers while another agent's are on the bus: nothing listens on its own
    // subject, so the NATS server says so at once, well before the requester's timeout.
    const other = await run("bash", ["-c", `${substitute(lines.at(-1)!).replace("--agent alpha", "--agent beta")} --timeout-ms 60000`], env);
    expect(other.stdout).toBe("");
    expect(other.stderr).toContain("bus error unavailable (retryable): no worker of agent beta is on the bus: nothing listens on tool.invoke.mcp.beta");
    expect(other.code).toBe(1);
  });
});
