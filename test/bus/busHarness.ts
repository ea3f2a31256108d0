/**
 * Runs `abridge bus` as a real child process (the CLI under tsx) against a real nats-server, and
 * reads what goes over the bus with a plain NATS connection.
 */
import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import { connect, headers, type Msg, type NatsConnection, type Subscription } from "@nats-io/transport-node";
import { expect } from "vitest";
import { BusClient } from "../../src/index.js";
import { abridgeCommand } from "../helpers/abridgeCommand.js";
import { tempDir, waitForNoMarkedPids } from "../helpers/cliHarness.js";
import { startNatsServer, type NatsServer } from "../helpers/natsServer.js";
import { killAll } from "../helpers/processes.js";
import { Watch } from "../helpers/waitFor.js";

/** A running worker. */
export interface WorkerProcess {
  child: ChildProcess;
  pid: number;
  /** The worker id it printed (`host/pid/n`). */
  id: string;
  stderr(): string;
  /** Resolves once the worker has written `text` to stderr (checked on each chunk it writes). */
  untilStderr(text: string, what: string): Promise<void>;
  /** Resolves with the exit code (null when killed by a signal) once the process ended. */
  exited: Promise<number | null>;
  /** SIGTERM, then the exit code. */
  stop(): Promise<number | null>;
  /** SIGKILL, as a crash. */
  kill(): Promise<void>;
}

/** Options of {@link startWorker}. */
export interface WorkerOptions {
  config: string;
  nats: string;
  agent: string;
  args?: string[];
}

/** Starts `abridge bus --nats URL --agent NAME --config FILE ...args` and waits for its ready line. */
export async function startWorker(options: WorkerOptions): Promise<WorkerProcess> {
  const { command, args } = abridgeCommand(["bus", "--nats", options.nats, "--agent", options.agent, "--config", options.config, ...(options.args ?? [])]);
  const child = spawn(command, args, {
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "" },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  const written = new Watch();
  // "close": the exit code once stderr is read to its end too.
  const exited = new Promise<number | null>((resolve) => child.once("close", (code) => resolve(code)));
  const id = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`abridge bus did not start:\n${stderr}`)), 60_000);
    child.stderr!.on("data", (b: Buffer) => {
      stderr += b.toString("utf8");
      written.changed();
      const match = /worker (\S+) on nats:/.exec(stderr);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    });
    // "close", not "exit": stderr may still hold the last lines when the process has exited.
    child.once("close", (code) => {
      clearTimeout(timer);
      reject(new Error(`abridge bus exited with ${code}:\n${stderr}`));
    });
  });
  return {
    child,
    pid: child.pid!,
    id,
    stderr: () => stderr,
    untilStderr: (text, what) => written.until(() => stderr.includes(text), { what, detail: () => `stderr so far:\n${stderr}` }),
    exited,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      return exited;
    },
    async kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      await exited;
    },
  };
}

/** A plain NATS connection for a test's own messages. */
export function rawConnection(url: string): Promise<NatsConnection> {
  return connect({ servers: url, name: "abridge-test" });
}

/** Headers of a request as a host sends it (or, with `trust`, as a test forges it; null: no header). */
export function requestHeaders(trust: string | null = "tool-request"): ReturnType<typeof headers> {
  const h = headers();
  if (trust !== null) h.set("Content-Trust", trust);
  return h;
}

/** Every message on a subject, kept in order, and a way to wait for one that matches. */
export interface Collector {
  messages: Msg[];
  /** Resolves with the first message (seen or to come) that `match` accepts. */
  next(match: (msg: Msg) => boolean, what: string, limitMs?: number): Promise<Msg>;
  /** Resolves once `condition` over {@link messages} holds (checked now and on every message). */
  until(condition: () => boolean, what: string, limitMs?: number): Promise<void>;
  stop(): void;
}

/** Subscribes to `subject` and keeps what arrives. */
export async function collect(nc: NatsConnection, subject: string): Promise<Collector> {
  const messages: Msg[] = [];
  const waiters: { match: (msg: Msg) => boolean; resolve: (msg: Msg) => void }[] = [];
  const arrived = new Watch();
  const sub: Subscription = nc.subscribe(subject, {
    callback: (_err, msg) => {
      messages.push(msg);
      arrived.changed();
      for (const waiter of [...waiters]) {
        if (waiter.match(msg)) {
          waiters.splice(waiters.indexOf(waiter), 1);
          waiter.resolve(msg);
        }
      }
    },
  });
  await nc.flush();
  return {
    messages,
    next(match, what, limitMs = 30_000) {
      const seen = messages.find(match);
      if (seen) return Promise.resolve(seen);
      return new Promise<Msg>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`gave up waiting for ${what} (a hang guard)`)), limitMs);
        waiters.push({
          match,
          resolve: (msg) => {
            clearTimeout(timer);
            resolve(msg);
          },
        });
      });
    },
    until: (condition, what, limitMs) =>
      arrived.until(condition, { what, ...(limitMs !== undefined ? { timeoutMs: limitMs } : {}), detail: () => `${messages.length} messages on ${subject}` }),
    stop: () => sub.unsubscribe(),
  };
}

/** The JSON body of a message. */
export function body(msg: Msg): Record<string, unknown> {
  return msg.json<Record<string, unknown>>();
}

/**
 * What a bus test file starts once: a nats-server, a temporary folder with a marker for the
 * upstreams' command lines, and a plain NATS connection; workers and a BusClient on demand. `close`
 * ends them all in reverse order and checks no marked upstream is left behind.
 */
export class BusRig {
  private readonly cleanups: (() => Promise<void>)[] = [];

  private constructor(
    readonly nats: NatsServer,
    readonly dir: string,
    readonly marker: string,
    readonly raw: NatsConnection,
  ) {}

  /** `prefix` names the folder and the marker (`<prefix>-<folder>`). */
  static async open(prefix: string): Promise<BusRig> {
    const cleanups: (() => Promise<void>)[] = [];
    try {
      const nats = await startNatsServer();
      cleanups.push(() => nats.stop());
      const temp = await tempDir(`abridge-${prefix}-`);
      cleanups.push(temp.cleanup);
      const raw = await rawConnection(nats.url);
      cleanups.push(() => raw.close());
      const rig = new BusRig(nats, temp.dir, `${prefix}-${path.basename(temp.dir)}`, raw);
      rig.cleanups.push(...cleanups);
      return rig;
    } catch (err) {
      for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
      throw err;
    }
  }

  /** A worker, stopped by {@link close}. */
  async worker(options: WorkerOptions): Promise<WorkerProcess> {
    const worker = await startWorker(options);
    this.cleanups.push(async () => void (await worker.stop()));
    return worker;
  }

  /** A library client on this rig's server, closed by {@link close}. */
  async client(): Promise<BusClient> {
    const client = await BusClient.connect({ nats: this.nats.url });
    this.cleanups.push(() => client.close());
    return client;
  }

  async close(): Promise<void> {
    for (const cleanup of this.cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
    const left = await waitForNoMarkedPids(this.marker);
    killAll(left);
    expect(left, "upstreams left behind").toEqual([]);
  }
}
