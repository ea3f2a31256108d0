/**
 * HTTP and SSE upstreams had no bound on a message: the SDK reads a JSON answer whole and an event
 * whatever its size, so a 300 MB result peaked at 1.6 GB and a larger one failed the connection.
 * The stdio bound (256 MiB a message) now applies to every transport: the oversized answer fails
 * its call with "result over N bytes", the connection and every other server go on, and the peak
 * memory of `abridge serve` stays bounded. The answer to a call over streamable HTTP is bounded
 * tighter, by what can be passed on of it: `max_output_bytes` plus 32 MiB (a 200 MB result was read
 * whole, 1.3 GB at the peak, only to be cut to 200 kB; httpCallAnswerLimit.test.ts shows the bound
 * on 40 MiB). Slow (`npm run test:slow`): answers of hundreds of MiB pass through a real serve
 * process, since only an answer over the 256 MiB bound shows it; the bound itself is checked on
 * small messages in boundedFetch.test.ts.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { DEFAULT_MAX_OUTPUT_BYTES } from "../../src/config/schema.js";
import { DEFAULT_MAX_MESSAGE_BYTES } from "../../src/upstream/process/childStdioTransport.js";
import { HTTP_RESULT_SLACK_BYTES } from "../../src/upstream/mcp/transportFactory.js";
import { fixtureServerToml, tempDir } from "../helpers/cliHarness.js";
import { fixtureCommand } from "../helpers/processes.js";
import { serveOverStdio, type ServeSession } from "../helpers/serveHarness.js";
import { messageOf } from "../../src/model/errors.js";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Starts the hostile HTTP fixture in its own process; its port once it listens. */
async function startHugeServer(): Promise<number> {
  const { command, args } = fixtureCommand("hugeHttpServer.ts");
  const child: ChildProcess = spawn(command, args, { stdio: ["pipe", "pipe", "inherit"] });
  cleanups.push(async () => {
    if (child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGKILL");
    await exited;
  });
  return new Promise<number>((resolve, reject) => {
    let out = "";
    child.stdout!.on("data", (b: Buffer) => {
      out += b.toString("utf8");
      const match = /ready (\d+)/.exec(out);
      if (match) resolve(Number(match[1]));
    });
    child.once("exit", (code) => reject(new Error(`huge HTTP fixture exited with ${code}`)));
  });
}

/** Peak resident memory of `pid` so far (Linux), in MiB. */
function peakRssMib(pid: number): number {
  const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return Number(match?.[1]) / 1024;
}

function text(result: unknown): string {
  const content = (result as { content?: { text?: string }[] }).content ?? [];
  return content.map((c) => c.text ?? "").join("\n");
}

async function outcome(session: ServeSession, name: string, args: Record<string, unknown>): Promise<string> {
  try {
    const result = await session.client.callTool({ name, arguments: args }, undefined, { timeout: 240_000 });
    return `${(result as { isError?: boolean }).isError ? "tool error" : "ok"}: ${text(result).slice(0, 300)}`;
  } catch (err) {
    return `thrown: ${messageOf(err)}`;
  }
}

describe("HTTP and SSE upstreams are bounded like stdio", () => {
  it("a 300 MiB answer (event stream, JSON body, SSE transport) fails its call only, with memory bounded", { timeout: 600_000 }, async () => {
    const port = await startHugeServer();
    const { dir, cleanup } = await tempDir("abridge-huge-http-");
    cleanups.push(cleanup);
    const config = path.join(dir, "abridge.toml");
    await writeFile(
      config,
      [
        'mode = "full"',
        'cache_dir = "cache"',
        "[servers.stream]",
        `url = "http://127.0.0.1:${port}/mcp"`,
        "timeout_ms = 240000",
        "[servers.legacy]",
        'type = "sse"',
        `url = "http://127.0.0.1:${port}/sse"`,
        "timeout_ms = 240000",
        fixtureServerToml("echo", "echoServer.ts", ["--tools", "0"]),
      ].join("\n"),
    );
    const session = await serveOverStdio(config);
    cleanups.push(() => session.close());
    const limit = `result over ${DEFAULT_MAX_MESSAGE_BYTES} bytes`;
    // A call's answer over streamable HTTP stops at max_output_bytes + 32 MiB; the older SSE
    // transport carries every answer on one stream, where only the message bound applies.
    const callLimit = `result over ${DEFAULT_MAX_OUTPUT_BYTES + HTTP_RESULT_SLACK_BYTES} bytes`;
    const healthy = async (): Promise<void> => {
      expect(await outcome(session, "echo_echo", { text: "echo ok" })).toBe("ok: echo ok");
      expect(await outcome(session, "stream_echo", { text: "stream ok" })).toBe("ok: stream ok");
      expect(await outcome(session, "legacy_echo", { text: "legacy ok" })).toBe("ok: legacy ok");
    };
    await healthy();
    expect(await outcome(session, "stream_huge", { mb: 300, format: "sse" })).toContain(callLimit);
    await healthy();
    expect(await outcome(session, "stream_huge", { mb: 200, format: "json" })).toContain(callLimit);
    await healthy();
    expect(await outcome(session, "legacy_huge", { mb: 300 })).toContain(limit);
    await healthy();
    const peak = peakRssMib(session.pid!);
    // Unbounded, one such answer peaked at 1.6 GB; bounded, the most held is one message's bound
    // (256 MiB of raw bytes) plus the process's own ~150 MiB.
    expect(peak).toBeLessThan(900);
    // A result under the bound still arrives whole (then is cut to max_output_bytes, as any result).
    const whole = /^ok: \[abridge: output cut: 20971\d\d of /;
    expect(await outcome(session, "stream_huge", { mb: 2, format: "json" })).toMatch(whole);
    expect(await outcome(session, "stream_huge", { mb: 2 })).toMatch(whole);
    expect(await outcome(session, "legacy_huge", { mb: 2 })).toMatch(whole);
  });
});
