/**
 * A worker's life: SIGTERM drains (a call in flight is answered, or answered `shutting_down` once
 * the grace is over), the bridge and its upstreams are closed and the process exits 0; a NATS
 * server that goes away and comes back is reconnected to, logged once, with the same upstreams.
 */
import { existsSync } from "node:fs";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { BusCallError, BusClient } from "../../src/index.js";
import { fixtureServerToml, tempDir, waitForNoMarkedPids, writeConfig } from "../helpers/cliHarness.js";
import { killAll } from "../helpers/processes.js";
import { startNatsServer, type NatsServer } from "../helpers/natsServer.js";
import { startWorker, until, type WorkerProcess } from "./busHarness.js";

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

function text(result: { content?: unknown[] }): string {
  return (result.content as { text?: string }[]).map((c) => c.text ?? "").join("");
}

describe("abridge bus: shutdown", () => {
  it("SIGTERM: the call in flight is answered, then the worker exits 0 and its upstreams are gone", async () => {
    const { worker: w, mark, marker } = await worker("drain");
    const call = client.callTool("drain", "host_wait", { ms: 1500 });
    await until(() => existsSync(mark), "the call to reach the upstream");
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
    await until(() => existsSync(mark), "the call to reach the upstream");
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
    const { worker: w } = await worker("steady");
    const before = text(await client.callTool("steady", "files_pid", {}));
    await nats.stop();
    await until(() => w.stderr().includes("lost the NATS server"), "the worker to notice");
    // Down long enough for a few failed reconnect attempts (one a second): each must not log again.
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    await nats.restart();
    await until(() => w.stderr().includes("reconnected to the NATS server"), "the worker to reconnect");
    let after: string | undefined;
    await until(async () => {
      after = await client.callTool("steady", "files_pid", {}, { timeoutMs: 2_000 }).then(text, () => undefined);
      return after !== undefined;
    }, "a call to be served after the reconnect");
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
