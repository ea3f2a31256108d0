import { spawn } from "node:child_process";
import http from "node:http";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { fixtureServerToml, pidsWithMarker, writeConfig } from "../helpers/cliHarness.js";
import { BIN, serveOverHttp, type HttpServeProcess } from "../helpers/serveHarness.js";
import { useTempDir } from "../helpers/tempDir.js";

type Text = { type: string; text: string };

/** A POST through node:http, which (unlike fetch) lets a test set the Host header like a rebinding page would. */
function rawPost(url: string, headers: Record<string, string>, body: unknown): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      { method: "POST", headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers } },
      (res) => {
        let text = "";
        res.on("data", (b: Buffer) => (text += b.toString("utf8")));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on("error", reject);
    req.end(JSON.stringify(body));
  });
}

async function post(url: string, headers: Record<string, string>, body: unknown): Promise<Response> {
  return fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
    body: JSON.stringify(body),
  });
}

const INITIALIZE = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
};

describe("abridge serve --http", () => {
  const temp = useTempDir({ marker: "http" });
  let config: string;
  let serve: HttpServeProcess | undefined;
  beforeEach(async () => {
    config = await writeConfig(
      temp.path,
      [`cache_dir = "cache"`, fixtureServerToml("echo", "echoServer.ts", ["--tools", "2", "--name", temp.marker])].join("\n"),
    );
  });
  afterEach(async () => {
    await serve?.stop();
    serve = undefined;
    expect(pidsWithMarker(temp.marker)).toEqual([]);
  });

  it("serves two independent sessions that share the upstreams", async () => {
    serve = await serveOverHttp(config);
    const a = await serve.connect();
    const b = await serve.connect();
    const [ra, rb] = await Promise.all([
      a.callTool({ name: "echo_echo", arguments: { text: "from a" } }),
      b.callTool({ name: "echo_echo", arguments: { text: "from b" } }),
    ]);
    expect((ra.content as Text[])[0]!.text).toBe("from a");
    expect((rb.content as Text[])[0]!.text).toBe("from b");
    expect((await a.listTools()).tools.map((t) => t.name)).toEqual((await b.listTools()).tools.map((t) => t.name));
  });

  it("refuses a non-loopback Host or Origin (DNS rebinding) with 403", async () => {
    serve = await serveOverHttp(config);
    const evilHost = await rawPost(serve.url, { host: "evil.example:80" }, INITIALIZE);
    expect(evilHost.status).toBe(403);
    expect(evilHost.text).toContain("not a loopback address");
    const evilOrigin = await post(serve.url, { origin: "http://evil.example" }, INITIALIZE);
    expect(evilOrigin.status).toBe(403);
    const ok = await post(serve.url, { origin: "http://localhost:3000" }, INITIALIZE);
    expect(ok.status).toBe(200);
  });

  it("refuses Origin null and a Host with anything after its port with 403; loopback hosts with and without a port pass", async () => {
    serve = await serveOverHttp(config);
    const port = new URL(serve.url).port;
    // A sandboxed iframe, a file: page or a redirect sends "null": a page that could be anyone's.
    const nullOrigin = await rawPost(serve.url, { origin: "null" }, INITIALIZE);
    expect(nullOrigin.status).toBe(403);
    expect(nullOrigin.text).toContain('Origin \\"null\\"');
    for (const host of [`127.0.0.1:80@attacker.com`, `127.0.0.1:${port}@attacker.com`, `localhost:${port}/x`, `127.0.0.1:${port}:1`, `127.0.0.1:port`]) {
      const refused = await rawPost(serve.url, { host }, INITIALIZE);
      expect(refused.status, host).toBe(403);
      expect(refused.text).toContain("not a loopback address");
    }
    for (const origin of ["http://127.0.0.1:80@attacker.com", "file:///etc/passwd", "http://[::2]:1"]) {
      expect((await rawPost(serve.url, { origin }, INITIALIZE)).status, origin).toBe(403);
    }
    for (const host of [`localhost:${port}`, "localhost", `LOCALHOST:${port}`, `[::1]:${port}`]) {
      expect((await rawPost(serve.url, { host }, INITIALIZE)).status, host).toBe(200);
    }
    for (const origin of [`http://127.0.0.1:${port}`, "https://localhost", "http://[::1]:3000"]) {
      expect((await rawPost(serve.url, { origin }, INITIALIZE)).status, origin).toBe(200);
    }
  });

  it("refuses to start with an empty $ABRIDGE_TOKEN, naming it, instead of serving without authentication", async () => {
    for (const empty of ["", "   "]) {
      const child = spawn(process.execPath, ["--import", "tsx", BIN, "serve", "--config", config, "--http", "127.0.0.1:0"], {
        env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", ABRIDGE_TOKEN: empty },
        stdio: ["ignore", "ignore", "pipe"],
      });
      let stderr = "";
      // Before, it served, every request accepted without an Authorization header: the line with
      // its URL ends the wait as a failure instead of a hang.
      const outcome = await new Promise<string>((resolve) => {
        child.stderr.on("data", (b: Buffer) => {
          stderr += b.toString("utf8");
          if (/at http:\/\/127\.0\.0\.1:\d+\/mcp/.test(stderr)) resolve("serving");
        });
        child.once("exit", (code) => resolve(`exit ${code}`));
      });
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once("exit", resolve));
        child.kill("SIGTERM");
        await exited;
      }
      expect(outcome).toBe("exit 2");
      expect(stderr).toContain("$ABRIDGE_TOKEN is set but empty");
      expect(stderr).toContain("[USAGE]");
    }
  });

  it("requires the bearer token when one is set", async () => {
    serve = await serveOverHttp(config, [], { ABRIDGE_TOKEN: "s3cret-token-value" });
    expect((await post(serve.url, {}, INITIALIZE)).status).toBe(401);
    expect((await post(serve.url, { authorization: "Bearer wrong" }, INITIALIZE)).status).toBe(401);
    const client = await serve.connect({ authorization: "Bearer s3cret-token-value" });
    const r = await client.callTool({ name: "echo_echo", arguments: { text: "authorized" } });
    expect((r.content as Text[])[0]!.text).toBe("authorized");
    expect(serve.stderr()).not.toContain("s3cret-token-value");
  });

  it("answers requests without a session, unknown sessions, bad JSON and other paths with errors", async () => {
    serve = await serveOverHttp(config);
    const noSession = await post(serve.url, {}, { jsonrpc: "2.0", id: 2, method: "tools/list" });
    expect(noSession.status).toBe(400);
    const unknown = await post(serve.url, { "mcp-session-id": "no-such-session" }, { jsonrpc: "2.0", id: 2, method: "tools/list" });
    expect(unknown.status).toBe(404);
    const badJson = await fetch(serve.url, { method: "POST", headers: { "content-type": "application/json" }, body: "{nope" });
    expect(badJson.status).toBe(400);
    expect(((await badJson.json()) as { error: { code: number } }).error.code).toBe(-32700);
    const otherPath = await fetch(serve.url.replace("/mcp", "/other"));
    expect(otherPath.status).toBe(404);
  });
});
