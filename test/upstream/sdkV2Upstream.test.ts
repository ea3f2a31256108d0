/**
 * An upstream built on the v2 SDK (`@modelcontextprotocol/server` with `serveStdio`, which takes
 * the revision from the connection's opening): abridge's reading of 2026-07-28 meets the SDK's.
 */
import { describe, expect, it } from "vitest";
import type { ClientRelay } from "../../src/model/types.js";
import { fixtureServer } from "../helpers/processes.js";
import { Watch } from "../helpers/waitFor.js";
import { makePool } from "./harness.js";

const SERVER_INFO = "io.modelcontextprotocol/serverInfo";
const relay: ClientRelay = { client: "c", request: async () => ({ action: "accept", content: { ok: true } }), notify() {} };

describe("a v2 SDK server over stdio", () => {
  for (const protocol of ["auto", "2026-07-28", "legacy"] as const) {
    it(`protocol = ${protocol}: lists, calls, and answers its input_required`, async () => {
      const pool = makePool({ servers: [fixtureServer("v2", "sdkV2Server.ts", [], { protocol })], retryFailedStart: false });
      await pool.start();
      expect(pool.status("v2")).toMatchObject({ state: "ready", serverInfo: { name: "sdk-v2-fixture" } });
      expect(pool.tools().map((t) => t.name)).toEqual(["v2_add", "v2_add_tool", "v2_confirm", "v2_echo"]);
      const added = await pool.callTool("v2", "add", { a: 1, b: 2 });
      expect(added.content).toEqual([{ type: "text", text: "3" }]);
      // The SDK stamps its name into every stateless result's _meta: the mark of the revision spoken.
      const meta = (added._meta ?? {}) as Record<string, unknown>;
      expect(meta[SERVER_INFO] !== undefined).toBe(protocol !== "legacy");
      // Stateless: input_required answered by the relay; older revisions: the SDK's own elicitation request.
      expect((await pool.callTool("v2", "confirm", {}, { relay })).content).toEqual([{ type: "text", text: "confirmed" }]);
    });
  }

  it("a stateless-only v2 server and protocol = legacy: UPSTREAM_PROTOCOL", async () => {
    const pool = makePool({ servers: [fixtureServer("v2", "sdkV2Server.ts", ["--stateless-only"], { protocol: "legacy" })], retryFailedStart: false });
    await pool.start();
    expect(pool.status("v2")).toMatchObject({
      state: "failed",
      error: { code: "UPSTREAM_PROTOCOL", message: expect.stringContaining('v2: protocol = "legacy" but the server refused initialize') },
    });
  });

  it("a stateless-only v2 server and protocol = auto: stateless", async () => {
    const pool = makePool({ servers: [fixtureServer("v2", "sdkV2Server.ts", ["--stateless-only"])], retryFailedStart: false });
    await pool.start();
    expect((await pool.callTool("v2", "echo", { text: "hi" }))._meta).toMatchObject({ [SERVER_INFO]: { name: "sdk-v2-fixture" } });
  });
});

describe("a v2 SDK server's tools/list_changed", () => {
  it("reaches abridge through subscriptions/listen: a tool it adds is listed", async () => {
    const pool = makePool({ servers: [fixtureServer("v2", "sdkV2Server.ts", [], { protocol: "2026-07-28" })] });
    const changed = new Watch();
    pool.on("toolsChanged", () => changed.changed());
    await pool.start();
    expect((await pool.callTool("v2", "add_tool", { name: "fresh" })).content).toEqual([{ type: "text", text: "added fresh" }]);
    await changed.until(() => pool.tools().some((t) => t.name === "v2_fresh"), { what: "the re-list after tools/list_changed" });
    expect((await pool.callTool("v2", "fresh", {})).content).toEqual([{ type: "text", text: "fresh ran" }]);
  });
});
