import { mkdtempSync, rmSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { createServer } from "node:net";
import type { AddressInfo, Server } from "node:net";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { bwrapArgs, findExecutable, sandboxEnvironment } from "../../src/upstream/process/sandbox.js";
import { serverConfig } from "../helpers/processes.js";
import { waitFor } from "../helpers/waitFor.js";
import { fixtureToml, resultText, startBridge } from "./bridgeHarness.js";
import { expectBwrapMissing, HAVE_BWRAP, sandboxed } from "./bubblewrap.js";

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((resolve) => s.close(resolve))));
});

async function listen(): Promise<number> {
  const server = createServer((socket) => socket.end());
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return (server.address() as AddressInfo).port;
}

describe("bwrap arguments", () => {
  it("read-only root, private /dev /proc /tmp, no network, named writable paths and env only", () => {
    const config = serverConfig({ name: "s", command: "node", args: ["server.js"], env: { TOKEN: "t0k3n" }, sandbox_write: ["/data"], cwd: "/work" });
    const args = bwrapArgs(config);
    const joined = args.join(" ");
    expect(joined).toContain("--ro-bind / / --dev /dev --proc /proc --tmpfs /tmp --unshare-all");
    expect(args).not.toContain("--share-net");
    expect(joined).toContain("--bind /data /data");
    // Values never go on the command line, which every local user can read in /proc.
    expect(joined).not.toContain("t0k3n");
    expect(joined).not.toContain("--setenv");
    expect(sandboxEnvironment(config, { PATH: "/usr/bin", HOME: "/home/u", OTHER: "leak" })).toEqual({ PATH: "/usr/bin", HOME: "/home/u", TOKEN: "t0k3n" });
    expect(joined.endsWith("--chdir /work -- node server.js")).toBe(true);
    expect(bwrapArgs(serverConfig({ name: "s", command: "x", sandbox_network: true }))).toContain("--share-net");
    expect(findExecutable("definitely-not-a-program", "/usr/bin:/bin")).toBeUndefined();
  });

  it("binds sandbox_read paths read-only over the private /tmp, and masks abridge's files after them", () => {
    const hidden = mkdtempSync(path.join(tmpdir(), "abridge-hidden-"));
    try {
      const joined = bwrapArgs(serverConfig({ name: "s", command: "node", sandbox_read: ["/tmp/tools"] }), [hidden]).join(" ");
      const tmp = joined.indexOf("--tmpfs /tmp ");
      const read = joined.indexOf("--ro-bind /tmp/tools /tmp/tools");
      const mask = joined.indexOf(`--tmpfs ${hidden}`);
      expect(tmp).toBeGreaterThan(-1);
      expect(read).toBeGreaterThan(tmp);
      expect(mask).toBeGreaterThan(read);
    } finally {
      rmSync(hidden, { recursive: true, force: true });
    }
  });
});

describe(`sandboxed stdio servers (bubblewrap ${HAVE_BWRAP ? "present: the sandbox itself" : "absent: the start-up error"})`, () => {
  it("runs under bwrap: own environment, writes only to sandbox_write, no network", async () => {
    const port = await listen();
    const toml =
      'mode = "full"\n' +
      fixtureToml("box", "annotatedServer.ts", [], [...sandboxed(), 'sandbox_write = ["{dir}/writable"]', 'env = { NAMED = "yes" }']) +
      fixtureToml("net", "annotatedServer.ts", [], [...sandboxed(), "sandbox_network = true"]);
    const started = await startBridge(toml, { prepare: (dir) => mkdir(path.join(dir, "writable")).then(() => undefined) });
    const { bridge } = started;
    if (!HAVE_BWRAP) return expectBwrapMissing(bridge, ["box", "net"]);
    expect(bridge.servers().map((s) => [s.name, s.state, s.error?.message])).toEqual([
      ["box", "ready", undefined],
      ["net", "ready", undefined],
    ]);
    const env = JSON.parse(resultText(await bridge.callTool("box_env", {}))) as Record<string, string>;
    // bwrap sets PWD itself after changing directory; nothing else from abridge's environment.
    expect(
      Object.keys(env)
        .filter((k) => k !== "PWD")
        .sort(),
    ).toEqual(["HOME", "NAMED", "PATH"]);

    const inside = path.join(started.dir, "writable", "ok.txt");
    expect(resultText(await bridge.callTool("box_write_path", { path: inside }))).toBe("written");
    expect(await readFile(inside, "utf8")).toBe("written");
    // Outside /tmp (which is private) the root is read-only, even for root.
    const hostFile = `/var/tmp/abridge-sandbox-${process.pid}-${Date.now()}.txt`;
    const outside = await bridge.callTool("box_write_path", { path: hostFile });
    await rm(hostFile, { force: true });
    expect(resultText(outside)).toMatch(/cannot write: (EROFS|EACCES)/);
    // The temp dir is under /tmp: the write lands in the sandbox's own /tmp, not on the host.
    expect(resultText(await bridge.callTool("box_write_path", { path: path.join(started.dir, "outside.txt") }))).toBe("written");
    await expect(readFile(path.join(started.dir, "outside.txt"), "utf8")).rejects.toMatchObject({ code: "ENOENT" });
    // Private /tmp: writable, but not the host's.
    expect(resultText(await bridge.callTool("box_write_path", { path: "/tmp/inside-sandbox.txt" }))).toBe("written");
    await expect(readFile("/tmp/inside-sandbox.txt", "utf8")).rejects.toMatchObject({ code: "ENOENT" });

    const denied = await bridge.callTool("box_connect", { port });
    expect(resultText(denied)).toMatch(/cannot connect/);
    expect(resultText(await bridge.callTool("net_connect", { port }))).toBe("connected");
  });

  it("hides abridge's own state, spilled outputs and config from a sandboxed server", async () => {
    // Outside /tmp, which the sandbox replaces anyway: /var/tmp is on the real root file system.
    const base = await mkdtemp("/var/tmp/abridge-hide-");
    try {
      const stateDir = path.join(base, "state");
      await mkdir(stateDir);
      await writeFile(path.join(stateDir, "abridge.lock"), '{"token":"daemon-token-value"}', { mode: 0o600 });
      const visible = path.join(base, "visible.txt");
      await writeFile(visible, "public");
      const toml = `mode = "full"\n${fixtureToml("box", "annotatedServer.ts", [], sandboxed())}`;
      const { bridge } = await startBridge(toml, { stateDir });
      if (!HAVE_BWRAP) return expectBwrapMissing(bridge, ["box"]);
      expect(bridge.servers()[0]?.state).toBe("ready");
      const lock = await bridge.callTool("box_read_path", { path: path.join(stateDir, "abridge.lock") });
      expect(resultText(lock)).not.toContain("daemon-token-value");
      expect(resultText(lock)).toMatch(/cannot read: ENOENT/);
      expect(resultText(await bridge.callTool("box_read_path", { path: visible }))).toBe("public");
    } finally {
      await rm(base, { recursive: true, force: true });
    }
  });

  it("masks hidden files with /dev/null and folders with a tmpfs, but never the server's own cwd", () => {
    const config = serverConfig({ name: "s", command: "x", cwd: "/srv/project/app" });
    const hide = ["/etc/hostname", "/var", "/srv/project", "/nonexistent-abridge-path"];
    const joined = bwrapArgs(config, hide).join(" ");
    expect(joined).toContain("--ro-bind /dev/null /etc/hostname");
    expect(joined).toContain("--tmpfs /var");
    expect(joined).not.toContain("/srv/project --");
    expect(joined).not.toContain("--tmpfs /srv/project");
    expect(joined).not.toContain("nonexistent-abridge-path");
  });

  it("a missing bwrap is a clear start error for that server only, never an unsandboxed run", async () => {
    const toml =
      'mode = "full"\n' +
      fixtureToml("box", "annotatedServer.ts", [], ['sandbox = "bwrap"', 'env = { PATH = "/nonexistent" }']) +
      fixtureToml("plain", "annotatedServer.ts");
    const { bridge, lines } = await startBridge(toml);
    const box = bridge.servers().find((s) => s.name === "box");
    expect(box).toMatchObject({ state: "failed", error: { code: "UPSTREAM_START_FAILED" } });
    expect(box?.error?.message).toMatch(/bwrap was not found on PATH.*bubblewrap/);
    expect(bridge.servers().find((s) => s.name === "plain")?.state).toBe("ready");
    expect(lines.some((l) => l.includes("annotated fixture ready") && l.includes("server=box"))).toBe(false);
  });

  it("shows a folder under the host's /tmp only when sandbox_read names it", async () => {
    const shared = await mkdtemp(path.join(tmpdir(), "abridge-read-"));
    try {
      const file = path.join(shared, "tool-data.txt");
      await writeFile(file, "visible through sandbox_read");
      const toml = `mode = "full"\n${fixtureToml("shown", "annotatedServer.ts", [], sandboxed([shared]))}${fixtureToml("unseen", "annotatedServer.ts", [], sandboxed())}`;
      const { bridge } = await startBridge(toml);
      if (!HAVE_BWRAP) return expectBwrapMissing(bridge, ["shown", "unseen"]);
      expect(resultText(await bridge.callTool("shown_read_path", { path: file }))).toBe("visible through sandbox_read");
      expect(resultText(await bridge.callTool("unseen_read_path", { path: file }))).toMatch(/cannot read: ENOENT/);
    } finally {
      await rm(shared, { recursive: true, force: true });
    }
  });

  it("a sandbox_read path that does not exist is a clear start error", async () => {
    const toml = `mode = "full"\n${fixtureToml("box", "annotatedServer.ts", [], sandboxed(["{dir}/missing"]))}`;
    const { bridge } = await startBridge(toml);
    if (!HAVE_BWRAP) return expectBwrapMissing(bridge, ["box"]);
    expect(bridge.servers()[0]).toMatchObject({ state: "failed", error: { code: "UPSTREAM_START_FAILED" } });
    expect(bridge.servers()[0]?.error?.message).toMatch(/sandbox_read path .*missing does not exist/);
  });

  it("a sandbox_write path that does not exist is a clear start error", async () => {
    const toml = `mode = "full"\n${fixtureToml("box", "annotatedServer.ts", [], [...sandboxed(), 'sandbox_write = ["{dir}/missing"]'])}`;
    const { bridge } = await startBridge(toml);
    if (!HAVE_BWRAP) return expectBwrapMissing(bridge, ["box"]);
    expect(bridge.servers()[0]).toMatchObject({ state: "failed", error: { code: "UPSTREAM_START_FAILED" } });
    expect(bridge.servers()[0]?.error?.message).toMatch(/sandbox_write path .*missing does not exist/);
  });
});

describe("lifecycle = per_call", () => {
  it("starts a fresh process for every call and leaves none running between calls", async () => {
    const toml = `mode = "full"\n${fixtureToml("once", "annotatedServer.ts", [], ['lifecycle = "per_call"'])}`;
    const { bridge, pids } = await startBridge(toml);
    const first = Number(resultText(await bridge.callTool("once_pid", {})));
    const second = Number(resultText(await bridge.callTool("once_pid", {})));
    expect(first).not.toBe(second);
    // Each process saw exactly one call.
    expect(resultText(await bridge.callTool("once_count", {}))).toBe("1");
    const [a, b] = await Promise.all([bridge.callTool("once_pid", {}), bridge.callTool("once_pid", {})]);
    expect(resultText(a)).not.toBe(resultText(b));
    pids();
    // Each call's process is ended after it (polled: the end is not instant, only certain).
    await waitFor(() => bridge.childPids().length === 0, {
      what: "the per-call processes to end",
      timeoutMs: 20_000,
      detail: () => `still running: ${bridge.childPids().join(", ")}`,
    });
  });
});
