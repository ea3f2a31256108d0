/**
 * A worker's life: SIGTERM drains (a call in flight is answered, or answered `shutting_down` once
 * the grace is over), the bridge and its upstreams are closed and the process exits 0; a NATS
 * server that goes away and comes back is reconnected to, logged once, with the same upstreams.
 */
import { existsSync } from "node:fs";
import { createServer, type Socket } from "node:net";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { BusCallError, BusClient } from "../../src/index.js";
import { fixtureServerToml, tempDir, waitForNoMarkedPids, writeConfig } from "../helpers/cliHarness.js";
import { killAll } from "../helpers/processes.js";
import { startNatsServer, type NatsServer } from "../helpers/natsServer.js";
import { Watch, waitFor } from "../helpers/waitFor.js";
import { startWorker, type WorkerProcess } from "./busHarness.js";

let nats: NatsServer;
let client: BusClient;
const cleanups: (() => Promise<void>)[] = [];
const markers: string[] = [];

beforeAll(async () => {
  nats = await startNatsServer();
  client = await BusClient.connect({ nats: nats.url });
}, 60_000);

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
  const left = (await Promise.all(markers.splice(0).map((m) => waitForNoMarkedPids(m)))).flat();
  killAll(left);
  expect(left, "processes left behind").toEqual([]);
});

afterAll(async () => {
  await client.close();
  await nats.stop();
});

/** A worker of `agent` whose `host_wait` tool writes the returned mark file when a call arrives. */
async function worker(agent: string, args: string[] = [], natsUrl = nats.url): Promise<{ worker: WorkerProcess; mark: string; marker: string }> {
  const { dir, cleanup } = await tempDir("abridge-bus-life-");
  cleanups.push(cleanup);
  const marker = `bus-life-${path.basename(dir)}`;
  markers.push(marker);
  const mark = path.join(dir, "call-arrived");
  const config = await writeConfig(
    dir,
    [
      'mode = "full"',
      'cache_dir = "cache"',
      fixtureServerToml("host", "misbehavingServer.ts", ["--marker", marker, "--mark-file", mark]),
      fixtureServerToml("files", "annotatedServer.ts", ["--marker", marker]),
    ].join("\n"),
  );
  const started = await startWorker({ config, nats: natsUrl, agent, args });
  cleanups.push(() => started.kill());
  return { worker: started, mark, marker };
}

/**
 * Listens on a stopped NATS server's port, hanging up on every connection, until `attempts`
 * connections came (reconnect attempts, each failing as against a server that is gone), then
 * frees the port again.
 */
async function failedReconnects(port: number, attempts: number): Promise<void> {
  const sockets = new Set<Socket>();
  let connections = 0;
  const arrived = new Watch();
  const server = createServer((socket) => {
    connections += 1;
    sockets.add(socket);
    socket.on("error", () => undefined);
    socket.on("close", () => sockets.delete(socket));
    socket.destroy();
    arrived.changed();
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => resolve());
  });
  try {
    await arrived.until(() => connections >= attempts, { what: `${attempts} reconnect attempts on port ${port}`, detail: () => `${connections} came` });
  } finally {
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

function text(result: { content?: unknown[] | undefined }): string {
  return (result.content as { text?: string }[]).map((c) => c.text ?? "").join("");
}

describe("abridge bus: shutdown", () => {
  it("SIGTERM: the call in flight is answered, then the worker exits 0 and its upstreams are gone", async () => {
    const { worker: w, mark, marker } = await worker("drain");
    const call = client.callTool("drain", "host_wait", { ms: 1500 });
    await waitFor(() => existsSync(mark), { what: "the call to reach the upstream" });
    const exit = w.stop();
    expect(text(await call)).toBe("waited 1500 ms");
    expect(await exit).toBe(0);
    expect(await waitForNoMarkedPids(marker)).toEqual([]);
    // Nobody takes the agent's calls any more.
    await expect(client.callTool("drain", "host_wait", { ms: 1 }, { timeoutMs: 2_000 })).rejects.toMatchObject({ retryable: true, origin: "client" });
  });

  it("SIGTERM: a call still running when the grace is over is answered shutting_down (retryable)", async () => {
    const { worker: w, mark, marker } = await worker("hurry", ["--grace-ms", "300"]);
    const call = client.callTool("hurry", "host_wait", { ms: 120_000 }).then(
      () => undefined,
      (err: unknown) => err,
    );
    await waitFor(() => existsSync(mark), { what: "the call to reach the upstream" });
    const exit = w.stop();
    const error = await call;
    expect(error).toBeInstanceOf(BusCallError);
    expect(error).toMatchObject({ busCode: "shutting_down", retryable: true, origin: "worker", worker: w.id });
    expect(await exit).toBe(0);
    expect(await waitForNoMarkedPids(marker)).toEqual([]);
  });
});

describe("abridge bus: the NATS server goes away", () => {
  it("reconnects when it is back, logs the outage once, and keeps its upstreams", async () => {
    // A server of its own, with no other client on it while it is down: every connection that
    // reaches its port meanwhile is one of the worker's reconnect attempts.
    const own = await startNatsServer();
    cleanups.push(() => own.stop());
    const { worker: w } = await worker("steady", [], own.url);
    const first = await BusClient.connect({ nats: own.url });
    const before = text(await first.callTool("steady", "files_pid", {}));
    await first.close();
    await own.stop();
    await w.untilStderr("lost the NATS server", "the worker to notice");
    // Down for a few failed reconnect attempts (one a second), each of which must not log again.
    await failedReconnects(own.port, 2);
    await own.restart();
    await w.untilStderr("reconnected to the NATS server", "the worker to reconnect");
    const second = await BusClient.connect({ nats: own.url });
    cleanups.push(() => second.close());
    let after: string | undefined;
    // Its subscriptions are back on the server once a call is served: tried until then.
    await waitFor(
      async () => {
        after = await second.callTool("steady", "files_pid", {}, { timeoutMs: 2_000 }).then(text, () => undefined);
        return after !== undefined;
      },
      { what: "a call to be served after the reconnect" },
    );
    expect(after).toBe(before);
    expect(w.stderr().match(/lost the NATS server/g)).toHaveLength(1);
    expect(w.stderr().match(/reconnected to the NATS server/g)).toHaveLength(1);
    expect(w.child.exitCode).toBeNull();
  });
});

describe("abridge bus: the NATS server refuses the worker for good", () => {
  it("exits 1 with BUS_UNAVAILABLE, ending its upstreams, and never shows the password", async () => {
    const guarded = await startNatsServer(["--user", "worker", "--pass", "first-pass"]);
    cleanups.push(() => guarded.stop());
    const { worker: w, marker } = await worker("locked", [], `nats://worker:first-pass@127.0.0.1:${guarded.port}`);
    await guarded.stop();
    // Back with other credentials: every reconnect is refused, and the client gives up.
    await guarded.restart(["--user", "worker", "--pass", "second-pass"]);
    expect(await w.exited).toBe(1);
    expect(w.stderr()).toMatch(/the connection to the NATS server at nats:\/\/127\.0\.0\.1:\d+ ended: .*\[BUS_UNAVAILABLE\]/);
    expect(w.stderr()).not.toContain("first-pass");
    expect(await waitForNoMarkedPids(marker)).toEqual([]);
  });
});
