import { readFile } from "node:fs/promises";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { fixtureServerToml, pidsWithMarker, TEST_STARTUP_GRACE, writeConfig } from "../helpers/cliHarness.js";
import { httpLegacyTranscript } from "../helpers/legacyTranscript.js";
import { serveOverHttp, type HttpServeProcess } from "../helpers/serveHarness.js";
import { REVISION, statelessMeta, statelessRequest } from "../helpers/statelessClient.js";
import { useTempDir } from "../helpers/tempDir.js";

const GOLDEN = new URL("../fixtures/legacyTranscript.json", import.meta.url);

describe("abridge serve --http speaks both eras", () => {
  const temp = useTempDir({ marker: "dual" });
  let config: string;
  let serve: HttpServeProcess | undefined;
  beforeEach(async () => {
    // The config the legacy transcript was recorded with (the marker only names the processes).
    config = await writeConfig(
      temp.path,
      [`cache_dir = "cache"`, TEST_STARTUP_GRACE, fixtureServerToml("echo", "echoServer.ts", ["--tools", "2", "--name", temp.marker])].join("\n"),
    );
  });
  afterEach(async () => {
    await serve?.stop();
    serve = undefined;
    expect(pidsWithMarker(temp.marker)).toEqual([]);
  });

  it("answers a client of the handshake era byte for byte as before revision 2026-07-28", async () => {
    serve = await serveOverHttp(config);
    const golden = JSON.parse(await readFile(GOLDEN, "utf8")) as { http: string[] };
    expect(await httpLegacyTranscript(serve.url)).toEqual(golden.http);
  });

  it("serves a 2026-07-28 client without a session, beside an SDK 1.x client, with the same tools in the same order", async () => {
    serve = await serveOverHttp(config);
    const discover = await statelessRequest(serve.url, "server/discover");
    expect(discover.status).toBe(200);
    expect(discover.headers.get("mcp-session-id")).toBeNull();
    expect(discover.body.result).toMatchObject({
      resultType: "complete",
      capabilities: { tools: { listChanged: true }, prompts: { listChanged: true } },
      _meta: { "io.modelcontextprotocol/serverInfo": { name: "abridge" } },
    });
    expect(discover.body.result?.supportedVersions).toEqual(expect.arrayContaining([REVISION, "2025-11-25", "2024-11-05"]));

    const listed = await statelessRequest(serve.url, "tools/list");
    expect(listed.status).toBe(200);
    const result = listed.body.result!;
    expect(result).toMatchObject({ resultType: "complete", cacheScope: "public" });
    expect(Number.isInteger(result.ttlMs) && (result.ttlMs as number) >= 0).toBe(true);
    const legacy = await serve.connect();
    const legacyNames = (await legacy.listTools()).tools.map((t) => t.name);
    expect((result.tools as { name: string }[]).map((t) => t.name)).toEqual(legacyNames);

    const called = await statelessRequest(serve.url, "tools/call", { name: "echo_echo", arguments: { text: "stateless" } });
    expect(called.body.result).toMatchObject({ resultType: "complete", content: [{ type: "text", text: "stateless" }] });
    // A name may travel base64 encoded in Mcp-Name (as one that is not plain ASCII must).
    const encoded = `=?base64?${Buffer.from("echo_echo").toString("base64")}?=`;
    const viaBase64 = await statelessRequest(serve.url, "tools/call", { name: "echo_echo", arguments: { text: "b64" } }, { headers: { "mcp-name": encoded } });
    expect(viaBase64.body.result).toMatchObject({ content: [{ type: "text", text: "b64" }] });
    // The session client is unaffected by the stateless traffic beside it.
    expect(await legacy.callTool({ name: "echo_echo", arguments: { text: "session" } })).toMatchObject({ content: [{ type: "text", text: "session" }] });
    expect(serve.stderr()).not.toMatch(/error/i);
  });

  it("refuses what the revision refuses, with the request's id and the revision's HTTP status", async () => {
    serve = await serveOverHttp(config);
    const { url } = serve;
    const unsupported = await statelessRequest(
      url,
      "server/discover",
      {},
      { id: 301, headers: { "mcp-protocol-version": "2099-01-01" }, meta: statelessMeta({}, { "io.modelcontextprotocol/protocolVersion": "2099-01-01" }) },
    );
    expect(unsupported.status).toBe(400);
    expect(unsupported.body).toMatchObject({ id: 301, error: { code: -32022, data: { requested: "2099-01-01" } } });
    expect(unsupported.body.error?.data?.supported).toEqual(expect.arrayContaining([REVISION, "2025-11-25"]));

    const noCapabilities = await statelessRequest(url, "server/discover", {}, { id: 302, meta: { "io.modelcontextprotocol/protocolVersion": REVISION } });
    expect(noCapabilities.status).toBe(400);
    expect(noCapabilities.body).toMatchObject({ id: 302, error: { code: -32602 } });
    expect(noCapabilities.body.error?.message).toContain("io.modelcontextprotocol/clientCapabilities");

    const mismatch = await statelessRequest(
      url,
      "server/discover",
      {},
      { id: 303, meta: statelessMeta({}, { "io.modelcontextprotocol/protocolVersion": "2025-11-25" }) },
    );
    expect([mismatch.status, mismatch.body.id, mismatch.body.error?.code]).toEqual([400, 303, -32020]);

    const wrongName = await statelessRequest(
      url,
      "tools/call",
      { name: "echo_echo", arguments: { text: "x" } },
      { id: 304, headers: { "mcp-name": "echo_add" } },
    );
    expect([wrongName.status, wrongName.body.error?.code]).toEqual([400, -32020]);
    expect(wrongName.body.error?.message).toContain("Mcp-Name");
    const noMethod = await statelessRequest(url, "tools/list", {}, { id: 305, headers: { "mcp-method": null } });
    expect([noMethod.status, noMethod.body.error?.code]).toEqual([400, -32020]);

    for (const removed of ["initialize", "ping", "logging/setLevel", "resources/subscribe"]) {
      const reply = await statelessRequest(url, removed, {}, { id: 306 });
      expect([removed, reply.status, reply.body.id, reply.body.error?.code]).toEqual([removed, 404, 306, -32601]);
    }
    const unknown = await statelessRequest(url, "tools/unknown", {}, { id: 307 });
    expect([unknown.status, unknown.body.error?.code]).toEqual([404, -32601]);

    // SEP-2164: a resource nobody offers is -32602 with the URI in data.
    const missing = await statelessRequest(url, "resources/read", { uri: "test://missing" }, { id: 308 });
    expect(missing.body).toMatchObject({ id: 308, error: { code: -32602, data: { uri: "test://missing" } } });

    const batch = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-protocol-version": REVISION },
      body: JSON.stringify([{ jsonrpc: "2.0", id: 1, method: "tools/list", params: { _meta: statelessMeta() } }]),
    });
    expect(batch.status).toBe(400);
    expect(await batch.text()).toContain("batch");
    // Nothing of this made a session.
    expect(serve.stderr()).not.toContain("HTTP session opened");
  });

  it("pages the tool list for a 2026-07-28 client as for a session, every page with its hints", async () => {
    serve = await serveOverHttp(config, ["--page-size", "2"]);
    const legacy = await serve.connect();
    const legacyNames: string[] = [];
    let legacyCursor: string | undefined;
    do {
      const page = await legacy.listTools(legacyCursor === undefined ? {} : { cursor: legacyCursor });
      legacyNames.push(...page.tools.map((t) => t.name));
      legacyCursor = page.nextCursor;
    } while (legacyCursor !== undefined);
    expect(legacyNames.length).toBeGreaterThan(2);
    const names: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await statelessRequest(serve.url, "tools/list", cursor === undefined ? {} : { cursor });
      const result = page.body.result!;
      expect(result).toMatchObject({ resultType: "complete", cacheScope: "public" });
      names.push(...(result.tools as { name: string }[]).map((t) => t.name));
      cursor = result.nextCursor as string | undefined;
      pages += 1;
    } while (cursor !== undefined);
    expect(names).toEqual(legacyNames);
    expect(pages).toBe(Math.ceil(legacyNames.length / 2));
    const bad = await statelessRequest(serve.url, "tools/list", { cursor: "not-a-cursor" });
    expect(bad.body.error).toMatchObject({ code: -32602 });
    expect(bad.body.error?.message).toContain("invalid cursor");
  });

  it("marks lists private when a bearer token guards them", async () => {
    serve = await serveOverHttp(config, [], { ABRIDGE_TOKEN: "s3cret-token" });
    const auth = { authorization: "Bearer s3cret-token" };
    const listed = await statelessRequest(serve.url, "tools/list", {}, { headers: auth });
    expect(listed.body.result).toMatchObject({ resultType: "complete", cacheScope: "private" });
    const refused = await statelessRequest(serve.url, "tools/list");
    expect(refused.status).toBe(401);
  });
});
