import { rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { MODES, type Mode } from "../../src/config/schema.js";
import { EXPOSED_TOOLS, startJsonRpcBackend, writeBackendManifests, type Backend } from "../fixtures/jsonRpcBackend.js";
import { writeConfig } from "../helpers/cliHarness.js";
import { serveOverStdio, type ServeSession } from "../helpers/serveHarness.js";
import { useTempDir } from "../helpers/tempDir.js";

type Text = { type: string; text: string };
type Result = { content?: unknown; isError?: boolean; structuredContent?: unknown; _meta?: unknown };
const textOf = (result: Result): string => (result.content as Text[])[0]!.text;

describe("abridge serve in front of a JSON-RPC backend", () => {
  const temp = useTempDir({ prefix: "abridge-jrpc-" });
  let config: string;
  let manifests: string;
  let backend: Backend;
  let session: ServeSession | undefined;
  beforeEach(async () => {
    manifests = path.join(temp.path, "manifests");
    await writeBackendManifests(manifests);
    backend = await startJsonRpcBackend(path.join(temp.path, "svc.sock"));
    config = await writeConfig(temp.path, `cache_dir = "cache"\n[servers.svc]\njsonrpc = "unix:svc.sock"\nmanifests = "manifests"\ntimeout_ms = 5000\n`);
  });
  afterEach(async () => {
    await session?.close();
    session = undefined;
    await backend.close();
  });

  /** Calls `name` directly, or through `call_tool` in lazy mode, where only meta-tools are listed. */
  const call = (mode: Mode, name: string, args: Record<string, unknown>): Promise<Result> =>
    session!.client.callTool(
      mode === "lazy" ? { name: "call_tool", arguments: { tool: name, arguments: args } } : { name, arguments: args },
    ) as Promise<Result>;

  it.each(MODES)(
    "%s: lists the manifests' tools, calls the mapped methods, maps errors and a closed connection",
    async (mode) => {
      session = await serveOverStdio(config, ["--mode", mode]);
      const names = (await session.client.listTools()).tools.map((t) => t.name);
      if (mode === "lazy") {
        expect(names).toEqual(expect.arrayContaining(["search_tools", "get_schema", "call_tool"]));
        expect(names.some((n) => n.startsWith("svc_"))).toBe(false);
      } else if (mode === "code") {
        expect(names).toEqual(["search_tools", "run_code"]);
      } else {
        expect(names.filter((n) => n.startsWith("svc_")).sort()).toEqual(EXPOSED_TOOLS.map((t) => `svc_${t}`).sort());
      }
      expect(names).not.toContain("svc_internal");
      expect(names).not.toContain("svc_orphan");

      const sum = await call(mode, "svc_add", { a: 2, b: 3 });
      expect(sum.isError, JSON.stringify(sum)).toBeFalsy();
      expect(textOf(sum)).toBe("5");

      const echoed = await call(mode, "svc_echo_object", { value: "v" });
      expect(echoed.structuredContent).toEqual({ received: { value: "v" } });

      const failed = await call(mode, "svc_fail", {});
      expect(failed.isError).toBe(true);
      expect(textOf(failed)).toContain("JSON-RPC error -32001: quota exceeded");

      const crashed = await call(mode, "svc_crash", {});
      expect(crashed.isError).toBe(true);
      expect(textOf(crashed)).toContain("[UPSTREAM_UNAVAILABLE, retryable]");
      // The next call reconnects.
      expect(textOf(await call(mode, "svc_say", { name: "Ada" }))).toBe("hello Ada");

      const before = backend.stats().requests["calc.add"] ?? 0;
      const invalid = await call(mode, "svc_add", { a: "two" });
      if (mode === "compact" || mode === "lazy" || mode === "auto" || mode === "code") {
        // Validated against the manifest's inputSchema: refused, never sent.
        expect(invalid.isError).toBe(true);
        expect(textOf(invalid)).toContain("The call was not forwarded");
        expect(backend.stats().requests["calc.add"] ?? 0).toBe(before);
      } else {
        // The model saw the full schema; the backend gets what it sent.
        expect(backend.stats().requests["calc.add"]).toBe(before + 1);
      }
    },
    60_000,
  );

  it("a manifest edit reaches the client as list_changed; a tool whose manifest went is unknown", async () => {
    session = await serveOverStdio(config, ["--mode", "full"]);
    expect((await session.client.listTools()).tools.map((t) => t.name)).toContain("svc_add");
    let changes = 0;
    let notify: () => void = () => undefined;
    session.client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      changes += 1;
      notify();
    });
    const changed = (): Promise<void> => new Promise((resolve) => (notify = resolve));

    const removed = changed();
    await rm(path.join(manifests, "calc"), { recursive: true });
    await removed;
    const after = (await session.client.listTools()).tools.map((t) => t.name);
    expect(after).not.toContain("svc_add");
    expect(after).toContain("svc_fail");
    // As any unknown name: a protocol error with the closest names (TOOL_NOT_FOUND -> -32602).
    await expect(session.client.callTool({ name: "svc_add", arguments: { a: 1, b: 1 } })).rejects.toThrow(/unknown tool "svc_add"/);

    const added = changed();
    await writeFile(
      path.join(manifests, "times.json"),
      JSON.stringify({
        id: "times",
        tools: [{ name: "times", description: "Adds, misnamed.", inputSchema: { type: "object" } }],
        implementation: { methods: { times: "calc.add" } },
      }),
    );
    await added;
    expect((await session.client.listTools()).tools.map((t) => t.name)).toContain("svc_times");
    expect(textOf((await session.client.callTool({ name: "svc_times", arguments: { a: 6, b: 7 } })) as Result)).toBe("13");
    expect(changes).toBeGreaterThanOrEqual(2);
  }, 60_000);
});
