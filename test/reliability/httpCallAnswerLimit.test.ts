/**
 * The answer to a call from a streamable HTTP upstream is read up to what can be passed on of it:
 * the server's `max_output_bytes` plus 32 MiB (room to cut at a block boundary, or to keep it whole
 * with spill). Read whole, a 200 MB result took serve to 1.3 GB only to be cut to 200 kB; now an
 * answer past the bound is let go of as it streams in and its call fails with "result over N
 * bytes", while the server, and a result within the bound, are served as before. (The 256 MiB
 * bound of every message, and answers of hundreds of MiB: httpResponseLimit.slow.test.ts.)
 */
import { spawn, type ChildProcess } from "node:child_process";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { DEFAULT_MAX_OUTPUT_BYTES } from "../../src/config/schema.js";
import { HTTP_RESULT_SLACK_BYTES } from "../../src/upstream/mcp/transportFactory.js";
import { fixtureCommand } from "../helpers/processes.js";
import { serveOverStdio, type ServeSession } from "../helpers/serveHarness.js";
import { useTempDir } from "../helpers/tempDir.js";
import { messageOf } from "../../src/model/errors.js";

const temp = useTempDir({ prefix: "abridge-call-answer-" });
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Starts the huge HTTP fixture in its own process; its port once it listens. */
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

/** How a call ended: `ok: <text>`, `tool error: <text>` or `thrown: <message>` (a JSON-RPC error). */
async function outcome(session: ServeSession, name: string, args: Record<string, unknown>): Promise<string> {
  try {
    const result = (await session.client.callTool({ name, arguments: args }, undefined, { timeout: 120_000 })) as {
      isError?: boolean;
      content?: { text?: string }[];
    };
    return `${result.isError ? "tool error" : "ok"}: ${(result.content ?? [])
      .map((c) => c.text ?? "")
      .join("\n")
      .slice(0, 300)}`;
  } catch (err) {
    return `thrown: ${messageOf(err)}`;
  }
}

describe("a call's answer from a streamable HTTP upstream", () => {
  it("is read up to max_output_bytes + 32 MiB: past it the call fails as it streams in; within it the result is cut as usual", async () => {
    const port = await startHugeServer();
    const config = path.join(temp.path, "abridge.toml");
    await writeFile(
      config,
      ['mode = "full"', 'cache_dir = "cache"', "[servers.stream]", `url = "http://127.0.0.1:${port}/mcp"`, "timeout_ms = 120000"].join("\n"),
    );
    const session = await serveOverStdio(config);
    cleanups.push(() => session.close());
    const callLimit = `result over ${DEFAULT_MAX_OUTPUT_BYTES + HTTP_RESULT_SLACK_BYTES} bytes`;
    expect(await outcome(session, "stream_echo", { text: "before" })).toBe("ok: before");
    // Before, both were read whole and cut to max_output_bytes ("ok: [abridge: output cut: ...").
    expect(await outcome(session, "stream_huge", { mb: 40, format: "json" })).toContain(callLimit);
    expect(await outcome(session, "stream_huge", { mb: 40, format: "sse" })).toContain(callLimit);
    expect(await outcome(session, "stream_huge", { mb: 2, format: "json" })).toMatch(/^ok: \[abridge: output cut: 20971\d\d of /);
    expect(await outcome(session, "stream_echo", { text: "after" })).toBe("ok: after");
  });
});
