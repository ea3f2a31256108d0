import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { startHttpFixture, startSseFixture } from "../fixtures/httpFixtures.js";
import type { HttpFixture } from "../fixtures/httpFixtures.js";
import { serverConfig } from "../helpers/processes.js";
import { makePool, waitForStatus } from "./harness.js";

const require = createRequire(import.meta.url);
/** Entry point of an installed npm server, started as `node <entry>` (no npx). */
function packageEntry(pkg: string): string {
  return join(require.resolve(`${pkg}/package.json`), "..", "dist", "index.js");
}

const fixtures: HttpFixture[] = [];
const tempDirs: string[] = [];
afterEach(async () => {
  await Promise.all(fixtures.splice(0).map((f) => f.close()));
  await Promise.all(tempDirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});

describe("UpstreamPool over HTTP and SSE", () => {
  it("lists and calls a streamable HTTP server, sending the configured headers", async () => {
    const fixture = await startHttpFixture();
    fixtures.push(fixture);
    const pool = makePool({
      servers: [serverConfig({ name: "web", transport: "http", url: fixture.url, headers: { "X-Api-Key": "k-123" } })],
    });
    await pool.start();
    expect(pool.status("web")?.state).toBe("ready");
    expect(pool.tools().map((t) => t.name)).toEqual(["web_add", "web_echo"]);
    expect((await pool.callTool("web", "add", { a: 1, b: 2 })).content).toEqual([{ type: "text", text: "3" }]);
    expect(fixture.seenHeaders.length).toBeGreaterThan(0);
    expect(fixture.seenHeaders.every((h) => h["x-api-key"] === "k-123")).toBe(true);
  });

  it("lists and calls an SSE server", async () => {
    const fixture = await startSseFixture();
    fixtures.push(fixture);
    const pool = makePool({ servers: [serverConfig({ name: "old", transport: "sse", url: fixture.url, headers: { "X-Api-Key": "s-9" } })] });
    await pool.start();
    expect(pool.status("old")?.state).toBe("ready");
    expect((await pool.callTool("old", "echo", { text: "via sse" })).content).toEqual([{ type: "text", text: "via sse" }]);
    expect(fixture.seenHeaders.every((h) => h["x-api-key"] === "s-9")).toBe(true);
  });

  it("an HTTP server that goes away: the call fails retryably and the server goes to restarting", async () => {
    const fixture = await startHttpFixture();
    const pool = makePool({ servers: [serverConfig({ name: "web", transport: "http", url: fixture.url })] });
    await pool.start();
    await fixture.close();
    const error = await pool.callTool("web", "echo", { text: "anyone?" }).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(error).toMatchObject({ retryable: true });
    expect(["UPSTREAM_UNAVAILABLE", "UPSTREAM_EXITED"]).toContain((error as { code: string }).code);
    await waitForStatus(pool, () => pool.status("web")?.state === "restarting");
    await expect(pool.callTool("web", "echo", { text: "x" })).rejects.toMatchObject({ code: "UPSTREAM_UNAVAILABLE", retryable: true });
  });

  it("reports a refused HTTP connection as a start failure", async () => {
    const fixture = await startHttpFixture();
    const url = fixture.url;
    await fixture.close();
    const pool = makePool({ servers: [serverConfig({ name: "gone", transport: "http", url })] });
    await pool.start();
    expect(pool.status("gone")).toMatchObject({ state: "failed", error: { code: "UPSTREAM_START_FAILED" } });
  });
});

describe("UpstreamPool with published servers", () => {
  it("lists and calls @modelcontextprotocol/server-everything (echo)", async () => {
    const pool = makePool({
      servers: [serverConfig({ name: "everything", command: process.execPath, args: [packageEntry("@modelcontextprotocol/server-everything"), "stdio"] })],
    });
    await pool.start();
    expect(pool.status("everything")?.state).toBe("ready");
    expect(pool.tools().length).toBeGreaterThan(5);
    expect(pool.resolve("everything_echo")).toEqual({ server: "everything", tool: "echo" });
    const result = await pool.callTool("everything", "echo", { message: "hi there" });
    expect(JSON.stringify(result.content)).toContain("hi there");
  });

  it("lists and calls @modelcontextprotocol/server-filesystem (list_directory)", async () => {
    const dir = await mkdtemp(join(tmpdir(), "abridge-fs-"));
    tempDirs.push(dir);
    await writeFile(join(dir, "note.txt"), "hello");
    const pool = makePool({
      servers: [serverConfig({ name: "fs", command: process.execPath, args: [packageEntry("@modelcontextprotocol/server-filesystem"), dir] })],
    });
    await pool.start();
    expect(pool.status("fs")?.state).toBe("ready");
    expect(pool.tools().map((t) => t.tool.name)).toContain("list_directory");
    const result = await pool.callTool("fs", "list_directory", { path: dir });
    expect(result.isError ?? false).toBe(false);
    expect(JSON.stringify(result.content)).toContain("note.txt");
  });
});
