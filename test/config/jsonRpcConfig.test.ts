import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { parseConfigText } from "../../src/config/loadConfig.js";
import { parseBackendAddress } from "../../src/config/backendAddress.js";
import { startJsonRpcBackend, writeBackendManifests, type Backend } from "../fixtures/jsonRpcBackend.js";
import { runAbridge, writeConfig } from "../helpers/cliHarness.js";
import { useTempDir } from "../helpers/tempDir.js";

const parse = (toml: string) => parseConfigText(toml, { file: "/etc/abridge/abridge.toml", env: {} });

describe('jsonrpc = "..." in the config', () => {
  it("reads unix and tcp addresses; relative socket and manifests paths resolve against the config's folder", () => {
    const config = parse(
      [
        `[servers.local]\njsonrpc = "unix:run/svc.sock"\nmanifests = "manifests"\ntimeout_ms = 500`,
        `[servers.abs]\njsonrpc = "unix:/run/svc.sock"\nmanifests = "/srv/manifests"`,
        `[servers.net]\njsonrpc = "tcp:127.0.0.1:7001"\nmanifests = "m"`,
      ].join("\n"),
    );
    const byName = Object.fromEntries(config.servers.map((s) => [s.name, s]));
    expect(byName["local"]).toMatchObject({
      transport: "jsonrpc",
      jsonrpc: "unix:/etc/abridge/run/svc.sock",
      manifests: "/etc/abridge/manifests",
      timeout_ms: 500,
    });
    expect(byName["abs"]).toMatchObject({ transport: "jsonrpc", jsonrpc: "unix:/run/svc.sock", manifests: "/srv/manifests" });
    expect(byName["net"]).toMatchObject({ transport: "jsonrpc", jsonrpc: "tcp:127.0.0.1:7001", manifests: "/etc/abridge/m" });
    // A jsonrpc server has no working directory of its own.
    expect(byName["local"]?.cwd).toBeUndefined();
  });

  it("parses addresses and refuses what is neither unix nor tcp", () => {
    expect(parseBackendAddress("unix:/a.sock")).toEqual({ kind: "unix", path: "/a.sock" });
    expect(parseBackendAddress("tcp:localhost:80")).toEqual({ kind: "tcp", host: "localhost", port: 80 });
    expect(parseBackendAddress("tcp:[::1]:7000")).toEqual({ kind: "tcp", host: "::1", port: 7000 });
    for (const bad of ["unix:", "tcp:host", "tcp:host:0", "tcp:host:70000", "http://x", "/a.sock"]) expect(parseBackendAddress(bad)).toBeUndefined();
  });

  it.each([
    ["no manifests", `jsonrpc = "unix:/s.sock"`, "servers.svc.manifests: expected a manifests folder beside jsonrpc, got nothing"],
    ["a command beside it", `jsonrpc = "unix:/s.sock"\nmanifests = "m"\ncommand = "svc"`, "servers.svc.command: expected no command on a jsonrpc server"],
    ["recorded beside it", `jsonrpc = "unix:/s.sock"\nmanifests = "m"\nrecorded = "r.json"`, "servers.svc.recorded: expected no recorded on a jsonrpc server"],
    [
      "a bad address",
      `jsonrpc = "http://127.0.0.1:7000"\nmanifests = "m"`,
      'servers.svc.jsonrpc: expected "unix:/path/to.sock" or "tcp:HOST:PORT", got "http://127.0.0.1:7000"',
    ],
    ["manifests alone", `command = "svc"\nmanifests = "m"`, "servers.svc.manifests: expected manifests only beside jsonrpc"],
  ])("refuses %s, naming the field", (_label, body, message) => {
    expect(() => parse(`[servers.svc]\n${body}\n`)).toThrow(message);
  });
});

describe("jsonrpc servers through the CLI", () => {
  const temp = useTempDir({ prefix: "abridge-jrpc-" });
  let backend: Backend | undefined;
  afterEach(async () => {
    await backend?.close();
    backend = undefined;
  });

  it("a manifests folder that is missing is a config error (exit 2) naming the field and the folder", async () => {
    const config = await writeConfig(temp.path, `[servers.svc]\njsonrpc = "unix:svc.sock"\nmanifests = "nowhere"\n`);
    const r = await runAbridge(["tools", "--config", config, "--cache-dir", "cache"], { cwd: temp.path });
    expect(r.code, r.stderr).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain(`servers.svc.manifests: cannot read the manifests folder ${path.join(temp.path, "nowhere")} (ENOENT)`);
    expect(r.stderr).toContain("[CONFIG_INVALID]");
  });

  it("a bad manifest is reported with file and field, the others load, and `abridge call` reaches the backend", async () => {
    const manifests = path.join(temp.path, "manifests");
    await writeBackendManifests(manifests);
    await mkdir(path.join(manifests, "more"), { recursive: true });
    await writeFile(path.join(manifests, "more", "bad.json"), JSON.stringify({ id: "bad", tools: "none", implementation: { methods: {} } }));
    backend = await startJsonRpcBackend(path.join(temp.path, "svc.sock"));
    const config = await writeConfig(temp.path, `[servers.svc]\njsonrpc = "unix:svc.sock"\nmanifests = "manifests"\n`);
    const tools = await runAbridge(["tools", "--json", "--config", config, "--cache-dir", "cache"], { cwd: temp.path });
    expect(tools.code, tools.stderr).toBe(0);
    expect(tools.stderr).toContain(`${path.join(manifests, "more", "bad.json")}: tools: expected an array of tools, got a string`);
    expect(tools.stderr).toContain("CONFIG_INVALID");
    const names = (JSON.parse(tools.stdout) as { tools: { name: string }[] }).tools.map((t) => t.name);
    expect(names).toContain("svc_add");
    expect(names).not.toContain("svc_internal");

    const call = await runAbridge(["call", "svc", "add", "--args", JSON.stringify({ a: 40, b: 2 }), "--config", config, "--cache-dir", "cache"], {
      cwd: temp.path,
    });
    expect(call.code, call.stderr).toBe(0);
    expect(call.stdout).toContain("42");
  }, 60_000);
});
