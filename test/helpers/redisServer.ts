/**
 * A real `redis-server` on a free loopback port, in a temp dir, for the shared-cache tests. Each
 * test file starts its own and stops it in afterAll/afterEach.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { Redis } from "ioredis";

/** Options of {@link startRedis}. */
export interface RedisServerOptions {
  /** Keep data across a restart: `appendonly yes` with an fsync per write. */
  persistent?: boolean;
  /** `requirepass`. */
  password?: string;
  /** Use this port (a restart on the same port). */
  port?: number;
}

/** A running redis-server. */
export interface RedisServer {
  port: number;
  /** `redis://127.0.0.1:<port>/<db>`. */
  url(db?: number): string;
  /** A plain client of database `db`, connected; the caller disconnects it. */
  admin(db?: number): Promise<Redis>;
  /** Stops it (SIGTERM, then SIGKILL); data stays in its dir. */
  stop(): Promise<void>;
  /** Starts it again on the same port with the same dir (and so the same data when persistent). */
  restart(): Promise<void>;
  /** Stops it and removes its dir. */
  destroy(): Promise<void>;
  /** Whether it is running. */
  readonly running: boolean;
}

/** A port nothing listens on right now. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

function waitForReady(child: ChildProcess, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    let output = "";
    const timer = setTimeout(() => reject(new Error(`redis-server on ${port} did not start: ${output}`)), 15_000);
    const onData = (chunk: Buffer): void => {
      output += chunk.toString("utf8");
      if (output.includes("Ready to accept connections")) {
        clearTimeout(timer);
        child.stdout?.off("data", onData);
        resolve();
      }
    };
    child.stdout?.on("data", onData);
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`redis-server on ${port} exited with ${code}: ${output}`));
    });
  });
}

/** Starts `redis-server --port P --bind 127.0.0.1` in a fresh temp dir. */
export async function startRedis(options: RedisServerOptions = {}): Promise<RedisServer> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "abridge-redis-"));
  const port = options.port ?? (await freePort());
  let child: ChildProcess | undefined;
  const args = [
    "--port",
    String(port),
    "--bind",
    "127.0.0.1",
    "--dir",
    dir,
    "--save",
    "",
    ...(options.persistent ? ["--appendonly", "yes", "--appendfsync", "always"] : ["--appendonly", "no"]),
    ...(options.password !== undefined ? ["--requirepass", options.password] : []),
  ];
  const launch = async (): Promise<void> => {
    const started = spawn("redis-server", args, { stdio: ["ignore", "pipe", "pipe"] });
    child = started;
    started.stdout?.resume();
    started.stderr?.resume();
    await waitForReady(started, port);
  };
  const stop = async (): Promise<void> => {
    const running = child;
    child = undefined;
    if (running === undefined || running.exitCode !== null || running.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => running.once("exit", () => resolve()));
    running.kill("SIGTERM");
    const timer = setTimeout(() => running.kill("SIGKILL"), 5_000);
    await exited;
    clearTimeout(timer);
  };
  await launch();
  return {
    port,
    url: (db = 0) => `redis://127.0.0.1:${port}/${db}`,
    admin: async (db = 0) => {
      const client = new Redis({ host: "127.0.0.1", port, db, lazyConnect: true });
      try {
        await client.connect();
        return client;
      } catch (err) {
        client.disconnect();
        throw err;
      }
    },
    stop,
    restart: async () => {
      await stop();
      await launch();
    },
    destroy: async () => {
      await stop();
      await rm(dir, { recursive: true, force: true });
    },
    get running() {
      return child !== undefined && child.exitCode === null && child.signalCode === null;
    },
  };
}
