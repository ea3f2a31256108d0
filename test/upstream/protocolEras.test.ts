/**
 * Upstreams of either MCP revision: the stateless 2026-07-28 one, the initialize handshake, and a
 * server of both, over stdio and streamable HTTP, with `protocol` = auto, 2026-07-28 and legacy.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { ServerConfig } from "../../src/config/schema.js";
import { startDualEraHttp } from "../fixtures/dualEraServer.js";
import { startLegacyHttp } from "../fixtures/legacyServer.js";
import { startStatelessHttp } from "../fixtures/statelessServer.js";
import { fixtureServer, serverConfig } from "../helpers/processes.js";
import { makePool, memoryLogger } from "./harness.js";

type Kind = "stateless" | "legacy" | "dual";
type Protocol = NonNullable<ServerConfig["protocol"]>;

const FILES: Record<Kind, string> = { stateless: "statelessServer.ts", legacy: "legacyServer.ts", dual: "dualEraServer.ts" };
const HTTP: Record<Kind, () => Promise<{ url: string; close(): Promise<void> }>> = {
  stateless: () => startStatelessHttp(),
  legacy: () => startLegacyHttp(),
  dual: () => startDualEraHttp(),
};

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

/** The server entry for fixture `kind` over `transport`, speaking `protocol`. */
async function entry(kind: Kind, transport: "stdio" | "http", protocol: Protocol, args: string[] = []): Promise<ServerConfig> {
  if (transport === "stdio") return fixtureServer(kind, FILES[kind], args, { protocol });
  const running = await HTTP[kind]();
  closers.push(() => running.close());
  return serverConfig({ name: kind, transport: "http", url: running.url, protocol });
}

/** What `whoami` says of the call: the revision the fixture saw it in. */
async function whoami(pool: ReturnType<typeof makePool>, server: string): Promise<Record<string, unknown>> {
  const result = await pool.callTool(server, "whoami", {});
  const first = (result.content as { text: string }[])[0]!;
  return JSON.parse(first.text) as Record<string, unknown>;
}

/** The revision each fixture is reached with under each `protocol`; an error code where it cannot be. */
const EXPECTED: Record<Kind, Record<Protocol, "stateless" | "legacy" | "UPSTREAM_PROTOCOL">> = {
  stateless: { auto: "stateless", "2026-07-28": "stateless", legacy: "UPSTREAM_PROTOCOL" },
  legacy: { auto: "legacy", "2026-07-28": "UPSTREAM_PROTOCOL", legacy: "legacy" },
  dual: { auto: "stateless", "2026-07-28": "stateless", legacy: "legacy" },
};

describe.each(["stdio", "http"] as const)("upstream revisions over %s", (transport) => {
  for (const kind of ["stateless", "legacy", "dual"] as const) {
    for (const protocol of ["auto", "2026-07-28", "legacy"] as const) {
      const expected = EXPECTED[kind][protocol];
      it(`${kind} server, protocol = ${protocol}: ${expected}`, async () => {
        const pool = makePool({ servers: [await entry(kind, transport, protocol)], retryFailedStart: false });
        await pool.start();
        if (expected === "UPSTREAM_PROTOCOL") {
          const status = pool.status(kind);
          expect(status).toMatchObject({ state: "failed", error: { code: "UPSTREAM_PROTOCOL" } });
          // Names the server and the revision, and says what to set instead.
          expect(status?.error?.message).toContain(`${kind}:`);
          expect(status?.error?.message).toMatch(/2026-07-28/);
          expect(status?.error?.message).toMatch(/set protocol = /);
          return;
        }
        expect(pool.status(kind)?.state).toBe("ready");
        expect(pool.tools().map((t) => t.name)).toEqual(expect.arrayContaining([`${kind}_echo`, `${kind}_add`, `${kind}_whoami`]));
        expect((await pool.callTool(kind, "add", { a: 2, b: 3 })).content).toEqual([{ type: "text", text: "5" }]);
        expect((await pool.callTool(kind, "echo", { text: "über" })).content).toEqual([{ type: "text", text: "über" }]);
        const seen = await whoami(pool, kind);
        expect(seen.era).toBe(expected);
        if (expected === "stateless") {
          // Every request carries the envelope; over HTTP the headers mirror it, and there is no session.
          expect(seen).toMatchObject({ protocolVersion: "2026-07-28", clientInfo: { name: "abridge" }, clientCapabilities: { sampling: {}, elicitation: {} } });
          if (transport === "http") expect(seen.headers).toEqual({ "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": "whoami" });
          // What discover said is the status (capabilities, server name); the result kind is not passed on.
          expect(pool.status(kind)).toMatchObject({ capabilities: { tools: {} }, serverInfo: { name: `${kind === "dual" ? "dual-era" : kind}-fixture` } });
          const result = await pool.callTool(kind, "echo", { text: "x" });
          expect(result).not.toHaveProperty("resultType");
        }
      });
    }
  }
});

describe("the server/discover probe", () => {
  it("a stdio server that quits on any request before initialize is started again with initialize (auto)", async () => {
    const { logger, lines } = memoryLogger();
    const pool = makePool({ servers: [fixtureServer("legacy", "legacyServer.ts", ["--exit-before-initialize"])], logger, retryFailedStart: false });
    await pool.start();
    expect(pool.status("legacy")?.state).toBe("ready");
    expect((await whoami(pool, "legacy")).era).toBe("legacy");
    expect(lines.some((l) => l.includes("closed on server/discover"))).toBe(true);
  });

  it("protocol = 2026-07-28 and a stdio server that quits on the probe: the exit is reported", async () => {
    const pool = makePool({
      servers: [fixtureServer("legacy", "legacyServer.ts", ["--exit-before-initialize"], { protocol: "2026-07-28" })],
      retryFailedStart: false,
    });
    await pool.start();
    expect(pool.status("legacy")).toMatchObject({
      state: "failed",
      error: { code: "UPSTREAM_START_FAILED", message: expect.stringContaining("exited with code 2") },
    });
  });

  it("protocol = legacy sends no server/discover", async () => {
    const running = await startLegacyHttp();
    closers.push(() => running.close());
    const pool = makePool({ servers: [serverConfig({ name: "old", transport: "http", url: running.url, protocol: "legacy" })] });
    await pool.start();
    expect(pool.status("old")?.state).toBe("ready");
    expect(running.seenHeaders.some((h) => h["mcp-method"] !== undefined)).toBe(false);
  });

  it("a per_call stateless server: each call's process gets no initialize and no probe", async () => {
    const pool = makePool({ servers: [fixtureServer("stateless", "statelessServer.ts", [], { lifecycle: "per_call" })] });
    await pool.start();
    expect(pool.status("stateless")?.state).toBe("ready");
    expect((await pool.callTool("stateless", "add", { a: 1, b: 1 })).content).toEqual([{ type: "text", text: "2" }]);
    expect((await whoami(pool, "stateless")).era).toBe("stateless");
  });
});
