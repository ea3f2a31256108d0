/**
 * A streamable HTTP client that drops the connection of a POST while its tool call runs: the
 * upstream call is cancelled (the slow fixture sees notifications/cancelled) rather than left to
 * run to its timeout_ms, and the session keeps serving.
 */
import http from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { createLogger } from "../../src/log/logger.js";
import { startHttpServer, type HttpFrontend } from "../../src/serve/httpServer.js";
import { Watch } from "../helpers/waitFor.js";
import { fixtureToml, resultText, startBridge } from "../policy/bridgeHarness.js";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.allSettled(
    cleanups
      .splice(0)
      .reverse()
      .map((c) => c()),
  );
});

const HEADERS = { "content-type": "application/json", accept: "application/json, text/event-stream" };

/** A POST whose response headers are in, the body still streaming. */
interface OpenPost {
  req: http.ClientRequest;
  res: http.IncomingMessage;
  text(): string;
  /** Resolves once the body so far contains `part` (checked on every chunk). */
  untilText(part: string, what: string): Promise<void>;
  ended: Promise<void>;
}

/** One POST; resolves with the response once its headers are in, the body still streaming. */
function openPost(url: string, headers: Record<string, string>, body: unknown): Promise<OpenPost> {
  return new Promise((resolve, reject) => {
    // agent: false: a socket of its own, so destroying it drops exactly this request.
    const req = http.request(url, { method: "POST", agent: false, headers: { ...HEADERS, ...headers } }, (res) => {
      let text = "";
      const streamed = new Watch();
      res.on("data", (b: Buffer) => {
        text += b.toString("utf8");
        streamed.changed();
      });
      res.on("error", () => undefined);
      // Listened for here: a short body can end before the caller's await resumes.
      const ended = new Promise<void>((done) => res.once("end", () => done()));
      const untilText = (part: string, what: string): Promise<void> =>
        streamed.until(() => text.includes(part), { what, detail: () => `body so far: ${text}` });
      resolve({ req, res, text: () => text, untilText, ended });
    });
    req.on("error", () => undefined);
    req.once("error", reject);
    req.end(JSON.stringify(body));
  });
}

async function postToEnd(url: string, headers: Record<string, string>, body: unknown): Promise<{ res: http.IncomingMessage; text: string }> {
  const { res, text, ended } = await openPost(url, headers, body);
  await ended;
  return { res, text: text() };
}

describe("serve --http: a client that disconnects mid-call", () => {
  it("cancels the upstream call and the session serves on", async () => {
    // A long timeout: a cancellation the upstream sees comes from the disconnect, not the timeout.
    const { bridge, lines, until } = await startBridge(`mode = "full"\n${fixtureToml("slow", "slowServer.ts", [], ["timeout_ms = 300000"])}`);
    const frontend: HttpFrontend = await startHttpServer(bridge, { port: 0 });
    cleanups.push(() => frontend.close());

    const init = await postToEnd(
      frontend.url,
      {},
      {
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
      },
    );
    const session = init.res.headers["mcp-session-id"];
    expect(typeof session).toBe("string");
    const headers = { "mcp-session-id": session as string, "mcp-protocol-version": "2025-06-18" };
    await postToEnd(frontend.url, headers, { jsonrpc: "2.0", method: "notifications/initialized" });

    const call = await openPost(frontend.url, headers, {
      jsonrpc: "2.0",
      id: 2,
      method: "tools/call",
      params: { name: "slow_sleep", arguments: { ms: 60_000, steps: 600 }, _meta: { progressToken: "p" } },
    });
    // Drop the connection once the upstream is demonstrably working on the call.
    await call.untilText("notifications/progress", "progress from the upstream");
    call.req.destroy();
    await until(() => lines.some((l) => /cancelled \d+/.test(l)), "the upstream to see the cancellation", 20_000);

    // The session (and the upstream) still serve.
    const client = new Client({ name: "after", version: "1" });
    await client.connect(new StreamableHTTPClientTransport(new URL(frontend.url)));
    cleanups.push(() => client.close());
    const ok = await client.callTool({ name: "slow_sleep", arguments: { ms: 10, steps: 1 } });
    expect(resultText(ok as { content: unknown[] })).toBe("slept 10 ms");
    expect(bridge.servers()[0]).toMatchObject({ state: "ready", restarts: 0 });
  });

  it("does not cancel a call whose answer was delivered", async () => {
    const { bridge } = await startBridge(`mode = "full"\n${fixtureToml("slow", "slowServer.ts", [], ["timeout_ms = 300000"])}`);
    const lines: string[] = [];
    const frontend = await startHttpServer(bridge, { port: 0, logger: createLogger({ level: "debug", sink: (line) => lines.push(line) }) });
    cleanups.push(() => frontend.close());
    const client = new Client({ name: "plain", version: "1" });
    await client.connect(new StreamableHTTPClientTransport(new URL(frontend.url)));
    cleanups.push(() => client.close());
    const ok = await client.callTool({ name: "slow_sleep", arguments: { ms: 50, steps: 1 } });
    expect(resultText(ok as { content: unknown[] })).toBe("slept 50 ms");
    expect(lines.some((l) => l.includes("cancelling its requests"))).toBe(false);
  });
});
