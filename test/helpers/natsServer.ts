/**
 * A real `nats-server` on a free loopback port, started for a test file and killed after it. It
 * can be stopped and started again on the same port (a NATS server that goes away and comes back).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createServer } from "node:net";

/** A running (or stopped, restartable) nats-server. */
export interface NatsServer {
  /** `nats://127.0.0.1:<port>`. */
  url: string;
  port: number;
  /** Kills the server (SIGKILL: gone, as a crash would leave it) and waits for the exit. */
  stop(): Promise<void>;
  /** Starts it again on the same port (with other `args`, e.g. other credentials, when given). */
  restart(args?: readonly string[]): Promise<void>;
}

/** A free TCP port on 127.0.0.1 (bound to port 0, read, released). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => (typeof address === "object" && address !== null ? resolve(address.port) : reject(new Error("no port"))));
    });
  });
}

/** Options of {@link startNatsServer}. */
export interface NatsServerOptions {
  /** Variables added to the server's environment (a config file's `$NAME` references read them). */
  env?: Record<string, string>;
}

function launch(port: number, args: readonly string[], options: NatsServerOptions): Promise<ChildProcess> {
  const env = options.env !== undefined ? { ...process.env, ...options.env } : process.env;
  const child = spawn("nats-server", ["-a", "127.0.0.1", "-p", String(port), ...args], { stdio: ["ignore", "ignore", "pipe"], env });
  let log = "";
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`nats-server did not start on ${port}:\n${log}`));
    }, 15_000);
    child.stderr!.on("data", (b: Buffer) => {
      log += b.toString("utf8");
      if (log.includes("Server is ready")) {
        clearTimeout(timer);
        resolve(child);
      }
    });
    child.once("error", (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`nats-server exited with ${code}:\n${log}`));
    });
  });
}

/**
 * Starts nats-server on a free loopback port (tries again if another process took the port
 * meanwhile), with extra `args` such as `--user U --pass P` or `-c FILE` (the address and port
 * given here win over a config file's `listen`).
 */
export async function startNatsServer(args: readonly string[] = [], options: NatsServerOptions = {}): Promise<NatsServer> {
  let port = await freePort();
  let child: ChildProcess | undefined;
  for (let attempt = 0; child === undefined; attempt++) {
    try {
      child = await launch(port, args, options);
    } catch (err) {
      if (attempt >= 3) throw err;
      port = await freePort();
    }
  }
  let current: ChildProcess | undefined = child;
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    async stop() {
      const running = current;
      current = undefined;
      if (running === undefined || running.exitCode !== null || running.signalCode !== null) return;
      const exited = new Promise<void>((resolve) => running.once("exit", () => resolve()));
      running.kill("SIGKILL");
      await exited;
    },
    async restart(again = args) {
      if (current !== undefined) throw new Error("nats-server is still running");
      current = await launch(port, again, options);
    },
  };
}
