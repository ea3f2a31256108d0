/**
 * Several workers on one bus: an agent's workers share its calls (one queue group); a worker
 * killed in the middle of a call leaves the requester its own `timeout` and the other worker
 * serves the retry; a worker's timeout is below the requester's, so a hanging tool gives the
 * worker's typed `timeout` first.
 */
import { existsSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import path from "node:path";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BusCallError, type BusClient } from "../../src/index.js";
import { fixtureServerToml, writeConfig } from "../helpers/cliHarness.js";
import { waitFor } from "../helpers/waitFor.js";
import { body, BusRig, requestHeaders, type WorkerProcess } from "./busHarness.js";
import { messageOf } from "../../src/model/errors.js";

let rig: BusRig;
let client: BusClient;
let raw: NatsConnection;
let marker: string;
/** Two workers of agent `fleet`, each with its own config folder, and the file each one's `wait` tool writes when a call arrives. */
const fleet: { worker: WorkerProcess; mark: string }[] = [];
let slowpoke: WorkerProcess;

beforeAll(async () => {
  rig = await BusRig.open("bus-fleet");
  ({ raw, marker } = rig);
  const configs: { config: string; mark: string }[] = [];
  for (const name of ["one", "two"]) {
    const dir = path.join(rig.dir, name);
    await mkdir(dir);
    const mark = path.join(dir, "call-arrived");
    const config = await writeConfig(
      dir,
      [
        'mode = "full"',
        'cache_dir = "cache"',
        fixtureServerToml("host", "misbehavingServer.ts", ["--marker", marker, "--mark-file", mark]),
        fixtureServerToml("echo", "echoServer.ts", ["--marker", marker]),
        fixtureServerToml("slow", "slowServer.ts", ["--marker", marker]),
      ].join("\n"),
    );
    configs.push({ config, mark });
  }
  const nats = rig.nats.url;
  const started = await Promise.all([
    ...configs.map((c) => rig.worker({ config: c.config, nats, agent: "fleet" })),
    // A worker of its own agent with a short call timeout, for the hanging tool.
    rig.worker({ config: configs[0]!.config, nats, agent: "slowpoke", args: ["--timeout-ms", "1500"] }),
  ]);
  fleet.push({ worker: started[0]!, mark: configs[0]!.mark }, { worker: started[1]!, mark: configs[1]!.mark });
  slowpoke = started[2]!;
  client = await rig.client();
}, 180_000);

afterAll(async () => rig?.close());

/** A call as raw NATS request, to see which worker answered. */
async function callRaw(agent: string, tool: string, args: Record<string, unknown>, id: string): Promise<Record<string, unknown>> {
  const reply = await raw.request("tool.invoke.mcp", JSON.stringify({ id, agent, tool, arguments: args }), { timeout: 30_000, headers: requestHeaders() });
  return body(reply);
}

describe("abridge bus: a fleet of workers", () => {
  it("shares an agent's calls between its workers (both serve)", async () => {
    const answers = await Promise.all(Array.from({ length: 24 }, (_, i) => callRaw("fleet", "echo_echo", { text: `call ${i}` }, `turn-${i}`)));
    answers.forEach((answer, i) => {
      expect(answer).toMatchObject({ ok: true, id: `turn-${i}`, result: { content: [{ type: "text", text: `call ${i}` }] } });
    });
    // Each call went to one worker; with 24 calls spread at random, both take some.
    expect(new Set(answers.map((a) => a.worker))).toEqual(new Set(fleet.map((f) => f.worker.id)));
  });

  it("a worker killed mid-call: the requester gets its own retryable timeout, and the other worker serves the retry", async () => {
    const call = client.callTool("fleet", "host_wait", { ms: 120_000 }, { timeoutMs: 4_000 }).then(
      () => undefined,
      (err: unknown) => err,
    );
    await waitFor(() => fleet.some((f) => existsSync(f.mark)), { what: "the call to reach one worker's upstream" });
    const victim = fleet.find((f) => existsSync(f.mark))!;
    const survivor = fleet.find((f) => f !== victim)!;
    await victim.worker.kill();
    const error = await call;
    expect(error).toBeInstanceOf(BusCallError);
    expect(error).toMatchObject({ busCode: "timeout", retryable: true, origin: "client" });
    const retry = await callRaw("fleet", "host_wait", { ms: 10 }, "retry");
    expect(retry).toMatchObject({ ok: true, worker: survivor.worker.id, result: { content: [{ type: "text", text: "waited 10 ms" }] } });
    expect(existsSync(survivor.mark)).toBe(true);
  });

  it("gives the worker's timeout error (retryable) before the requester's own for a hanging tool", async () => {
    const error = await client.callTool("slowpoke", "slow_sleep", { ms: 600_000 }, { timeoutMs: 60_000 }).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(error).toBeInstanceOf(BusCallError);
    expect(error).toMatchObject({ busCode: "timeout", retryable: true, origin: "worker", worker: slowpoke.id });
    expect(messageOf(error)).toContain("did not finish within the worker's timeout of 1500 ms");
    // The worker is free again.
    expect(await client.callTool("slowpoke", "echo_echo", { text: "next" })).toMatchObject({ content: [{ type: "text", text: "next" }] });
  });
});
