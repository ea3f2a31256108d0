/**
 * The first tools/list waits for the upstreams still starting; once the last one is up, that list
 * is answered and written before the summary jobs held during the start run. Released in the same
 * turn, the jobs (summarizing every new tool, loading the tokenizer for their entries) ran first
 * and held the answer back. Observed in process: a summarizer that counts its calls, read at the
 * moment the answer's line reaches the client's end of stdout.
 */
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { PassThrough } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { parseConfigText } from "../../src/config/parseConfigText.js";
import { Bridge } from "../../src/core/bridge.js";
import { serveStdio } from "../../src/serve/serveStdio.js";
import { ExtractiveSummarizer } from "../../src/summarize/extractiveSummarizer.js";
import type { Summarizer } from "../../src/summarize/types.js";
import { fixtureServerToml, tempDir } from "../helpers/cliHarness.js";
import { Watch } from "../helpers/waitFor.js";

const cleanups: (() => Promise<void>)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** The extractive summarizer, counting the tools it was asked for. */
function countingSummarizer(): { summarizer: Summarizer; asked: () => number } {
  const inner = new ExtractiveSummarizer();
  let asked = 0;
  return {
    summarizer: {
      id: inner.id,
      promptId: inner.promptId,
      maxBatch: inner.maxBatch,
      summarize: (batch, options) => {
        asked += batch.length;
        return inner.summarize(batch, options);
      },
    },
    asked: () => asked,
  };
}

describe("the first tools/list and the summary jobs held during the start", { timeout: 120_000 }, () => {
  it("answers the waiting list before any held job is summarized", async () => {
    const { dir, cleanup } = await tempDir("abridge-first-list-");
    cleanups.push(cleanup);
    const gate = path.join(dir, "gate");
    const file = path.join(dir, "abridge.toml");
    const toml = [
      'mode = "compact"\nstartup_grace_ms = 120000\n',
      fixtureServerToml("late", "lateServer.ts", ["--gate", gate, "--tools", "2"], "connect_timeout_ms = 120000"),
    ].join("\n");
    const config = parseConfigText(toml, { file, env: {} });
    const counting = countingSummarizer();
    const bridge = await Bridge.open({ config, cacheFile: path.join(dir, "cache", "summaries.jsonl"), env: {}, summarizer: counting.summarizer, begin: {} });
    cleanups.push(() => bridge.close());

    const stdin = new PassThrough();
    const stdout = new PassThrough();
    const stop = new AbortController();
    const serving = serveStdio(bridge, { stdin, stdout, mode: "compact", signal: stop.signal });
    cleanups.push(async () => {
      stop.abort();
      stdin.end();
      await serving;
    });
    const answers = new Map<unknown, { result?: { tools?: unknown[] } }>();
    let askedAtList: number | undefined;
    const received = new Watch();
    let buffer = "";
    stdout.setEncoding("utf8");
    stdout.on("data", (chunk: string) => {
      buffer += chunk;
      for (let newline = buffer.indexOf("\n"); newline !== -1; newline = buffer.indexOf("\n")) {
        const message = JSON.parse(buffer.slice(0, newline)) as { id?: unknown; result?: { tools?: unknown[] } };
        buffer = buffer.slice(newline + 1);
        if (message.id === "list") askedAtList = counting.asked();
        if (message.id !== undefined) answers.set(message.id, message);
      }
      received.changed();
    });
    const send = (message: object): void => void stdin.write(`${JSON.stringify(message)}\n`);
    send({
      jsonrpc: "2.0",
      id: "init",
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } },
    });
    await received.until(() => answers.has("init"), { what: "the initialize answer", timeoutMs: 60_000 });
    send({ jsonrpc: "2.0", method: "notifications/initialized" });
    // Sent while `late` waits for its gate: the list waits for it (the grace is long).
    send({ jsonrpc: "2.0", id: "list", method: "tools/list" });
    expect(bridge.status("late")?.state).toBe("connecting");
    await writeFile(gate, "open");

    await received.until(() => answers.has("list"), { what: "the tools/list answer", timeoutMs: 60_000 });
    expect(answers.get("list")?.result?.tools?.map((t) => (t as { name: string }).name)).toEqual(
      expect.arrayContaining(["late_echo", "late_add", "late_tool_001", "late_tool_002"]),
    );
    expect(askedAtList).toBe(0);
    // The jobs were only put off: they run once the start is over.
    await bridge.start();
    await bridge.drainSummaries();
    expect(counting.asked()).toBe(4);
  });
});
