/**
 * Programs over the bus, end to end: a real nats-server, `abridge bus` as a child process with
 * fixture servers as upstreams, BusClient.runCode and raw requests on `tool.run.mcp.<agent>`. A
 * run takes a slot of the worker's queue like a call; a program's failure comes back with its bus
 * code and its run; a malformed request is `bad_request`.
 */
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BusCallError, BusClient } from "../../src/index.js";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { fixtureServerToml, pidsWithMarker, writeConfig } from "../helpers/cliHarness.js";
import { waitFor } from "../helpers/waitFor.js";
import { body, BusRig, requestHeaders, type WorkerProcess } from "./busHarness.js";

let rig: BusRig;
let client: BusClient;
let raw: NatsConnection;
let marker: string;
let worker: WorkerProcess;

beforeAll(async () => {
  rig = await BusRig.open("bus-run");
  raw = rig.raw;
  marker = rig.marker;
  const config = await writeConfig(
    rig.dir,
    // Debug: the worker logs the slow fixture's stderr, where a test sees a call reach it.
    [
      'cache_dir = "cache"',
      'state_dir = "state"',
      'log_level = "debug"',
      fixtureServerToml("echo", "echoServer.ts", ["--marker", marker]),
      fixtureServerToml("slow", "slowServer.ts", ["--marker", marker]),
    ].join("\n"),
  );
  // One slot and one place in the queue: a run holds the slot while it runs.
  worker = await rig.worker({ config, nats: rig.nats.url, agent: "alpha", args: ["--max-concurrent", "1", "--max-queued", "1"] });
  client = await rig.client();
}, 120_000);

afterAll(async () => {
  await rig?.close();
  expect(pidsWithMarker(marker)).toEqual([]);
});

function text(result: { content?: unknown[] | undefined }): string {
  return (result.content as { type: string; text?: string }[]).map((c) => c.text ?? "").join("\n");
}

/** A raw run request on the agent's run subject, answered on a reply subject. */
async function rawRun(payload: Record<string, unknown>): Promise<Record<string, unknown>> {
  const msg = await raw.request("tool.run.mcp.alpha", JSON.stringify(payload), { timeout: 30_000, headers: requestHeaders() });
  expect(msg.headers?.get("Content-Trust")).toBe("tool-output");
  return body(msg);
}

describe("abridge bus: programs through BusClient.runCode", () => {
  it("runs a program calling the agent's tools and answers its result and text", async () => {
    const { result, answer } = await client.runCode("alpha", 'const r = await echo.echo({ text: "hi" });\nconsole.log("got", r);\nreturn [r, r];');
    expect(result).toMatchObject({
      ok: true,
      returnJson: '["hi","hi"]',
      console: [{ level: "log", text: "got hi" }],
      calls: [{ tool: "echo_echo", ok: true }],
    });
    expect(answer.isError).toBeUndefined();
    expect(text(answer)).toMatch(/^\[log\] got hi\n\["hi","hi"\]\n\(1 call, \d+ ms\)$/);
  });

  it("answers a failed program with its bus code beside its run; BusClient resolves it with result.ok false", async () => {
    const thrown = await rawRun({ id: "r1", agent: "alpha", code: "throw new Error('boom')" });
    expect(thrown).toMatchObject({
      id: "r1",
      ok: false,
      error: { code: "code_error", retryable: false, abridge_code: "CODE_ERROR" },
      run: { ok: false, error: { code: "CODE_ERROR" } },
    });
    expect(text(thrown.answer as { content: unknown[] })).toContain("boom");
    const timedOut = await rawRun({ id: "r2", agent: "alpha", code: "while (true) {}", limits: { timeout_ms: 300 } });
    expect(timedOut).toMatchObject({ ok: false, error: { code: "timeout", abridge_code: "CODE_TIMEOUT" } });
    // A program over the runtime's 64 KiB is a limit passed (a max_calls past in a program is an exception it may catch).
    const limited = await rawRun({ id: "r3", agent: "alpha", code: `return 1; // ${"x".repeat(70_000)}` });
    expect(limited).toMatchObject({ ok: false, error: { code: "too_large", abridge_code: "CODE_LIMIT" } });
    const viaClient = await client.runCode("alpha", "null.x");
    expect(viaClient.result.ok).toBe(false);
    expect(viaClient.result.error?.code).toBe("CODE_ERROR");
    expect(viaClient.answer.isError).toBe(true);
  });

  it("leaves out the console and return value of a run that would not fit in a NATS message; the answer text keeps their head", async () => {
    // 2 MB of console against the server's 1 MiB max_payload.
    const { result, answer } = await client.runCode("alpha", 'for (let i = 0; i < 2000; i++) console.log("x".repeat(1000)); return "done";');
    expect(result).toMatchObject({ ok: true, console: [], consoleDropped: 2000, cut: true });
    expect(result.returnJson).toBeUndefined();
    const shown = text(answer);
    expect(shown.startsWith(`[log] ${"x".repeat(1000)}\n`)).toBe(true);
    // Cut at max_output_bytes (200,000 by default), the cut said at its end, the footer kept after it.
    expect(shown.slice(-200)).toMatch(/\[abridge: output cut: \d+ of \d+ bytes left out \(limit \d+\)\.\]\n\(0 calls, \d+ ms\)$/);
  });

  it("refuses a malformed run request with bad_request: limits out of bounds, a misspelt member, no code", async () => {
    const bounds = await client.runCode("alpha", "return 1", { limits: { memory_mb: 5000 } }).catch((err: unknown) => err);
    expect(bounds).toBeInstanceOf(BusCallError);
    expect((bounds as BusCallError).busCode).toBe("bad_request");
    expect((bounds as BusCallError).message).toContain("limits.memory_mb");
    const typo = await rawRun({ id: "t", agent: "alpha", program: "return 1" });
    expect(typo).toMatchObject({ id: "t", ok: false, error: { code: "bad_request" } });
    expect(JSON.stringify(typo)).toContain("code");
  });

  it("takes a slot of the worker's queue while it runs: past the queue a call is answered busy", async () => {
    // The run holds the only slot until its 3 s are up (its call is then aborted); the two calls
    // sent right behind it fill the only queue place and the limit.
    const run = client.runCode("alpha", "await slow.sleep({ ms: 30000 }); return 1;", { limits: { timeout_ms: 3000 } });
    const calls = [client.callTool("alpha", "echo_echo", { text: "a" }), client.callTool("alpha", "echo_echo", { text: "b" })].map((p) =>
      p.then(
        () => "ok",
        (err: unknown) => (err instanceof BusCallError ? err.busCode : String(err)),
      ),
    );
    expect((await Promise.all(calls)).sort()).toEqual(["busy", "ok"]);
    const ran = await run;
    expect(ran.result.error?.code).toBe("CODE_TIMEOUT");
  });

  it("keeps two requesters' runs apart", async () => {
    const other = await BusClient.connect({ nats: rig.nats.url });
    try {
      // The first run holds the only slot (its call waits for a gate file) until the second has
      // been sent, so the second waits in the only queue place or runs after it.
      const gate = path.join(rig.dir, "gate-first");
      const sleeping = (): number => worker.stderr().split("sleeping ").length;
      const before = sleeping();
      const first = client.runCode("alpha", `console.log("first"); await slow.sleep({ gate: ${JSON.stringify(gate)} }); return "one";`);
      // The harness gives the worker's stderr as text only: polled for the new line.
      await waitFor(() => sleeping() > before, { what: "the first run's call at the slow fixture", detail: () => worker.stderr().slice(-2000) });
      const second = other.runCode("alpha", 'console.log("second"); return "two";');
      await writeFile(gate, "");
      const [a, b] = await Promise.all([first, second]);
      expect(a.result).toMatchObject({ ok: true, returnJson: '"one"', console: [{ text: "first" }] });
      expect(b.result).toMatchObject({ ok: true, returnJson: '"two"', console: [{ text: "second" }] });
      expect(a.result.runId).not.toBe(b.result.runId);
    } finally {
      await other.close();
    }
  });
});
