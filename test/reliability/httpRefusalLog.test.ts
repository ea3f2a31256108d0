/**
 * Requests without the bearer token, or from a non-loopback Host, are refused; each refusal used
 * to log a line, so any local process could fill the log (10,000 lines for 10,000 bad tokens).
 * They are logged as the daemon logs its refusals: a line per window, with the count left out.
 */
import { afterEach, describe, expect, it } from "vitest";
import { fixtureServerToml, tempDir, writeConfig } from "../helpers/cliHarness.js";
import { serveOverHttp, type HttpServeProcess } from "../helpers/serveHarness.js";

const REQUESTS = 300;
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const INITIALIZE = JSON.stringify({
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } },
});

async function start(): Promise<HttpServeProcess> {
  const { dir, cleanup } = await tempDir("abridge-refusals-");
  cleanups.push(cleanup);
  const config = await writeConfig(dir, fixtureServerToml("echo", "echoServer.ts"));
  const serve = await serveOverHttp(config, [], { ABRIDGE_TOKEN: "the-right-token-2718" });
  cleanups.push(() => serve.stop());
  return serve;
}

describe("HTTP refusals", () => {
  it(`${REQUESTS} requests with a wrong token: all refused, a handful of log lines`, async () => {
    const serve = await start();
    const headers = { "content-type": "application/json", accept: "application/json, text/event-stream" };
    for (let i = 0; i < REQUESTS; i++) {
      const res = await fetch(serve.url, { method: "POST", headers: { ...headers, authorization: `Bearer wrong-${i}` }, body: INITIALIZE });
      expect(res.status).toBe(401);
      await res.arrayBuffer();
    }
    // A line per 10 s window: 300 sequential requests on loopback would need minutes to earn 10.
    const lines = serve
      .stderr()
      .split("\n")
      .filter((l) => l.includes("refused HTTP request"));
    expect(lines.length).toBeGreaterThanOrEqual(1);
    expect(lines.length).toBeLessThan(10);
    // The server still serves the token holder.
    const client = await serve.connect({ authorization: "Bearer the-right-token-2718" });
    expect((await client.listTools()).tools.length).toBeGreaterThan(0);
  });
});
