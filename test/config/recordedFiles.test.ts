import { execFileSync } from "node:child_process";
import { truncate, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { parseConfigText } from "../../src/config/loadConfig.js";
import { MAX_RECORDED_BYTES } from "../../src/upstream/recorded/recordedUpstream.js";
import { runAbridge, writeConfig } from "../helpers/cliHarness.js";
import { useTempDir } from "../helpers/tempDir.js";

describe('recorded = "..." in the config', () => {
  const temp = useTempDir();

  it("resolves the path against the config file's folder and marks the transport", () => {
    const config = parseConfigText(`[servers.docs]\nrecorded = "lists/docs.json"\nallow = ["read_*"]\n`, { file: "/etc/abridge/abridge.toml", env: {} });
    expect(config.servers[0]).toMatchObject({ name: "docs", transport: "recorded", recorded: "/etc/abridge/lists/docs.json", allow: ["read_*"] });
  });

  it("refuses a transport beside recorded, naming the field", () => {
    expect(() => parseConfigText(`[servers.docs]\nrecorded = "docs.json"\ncommand = "docs-server"\n`, { file: "/x/abridge.toml", env: {} })).toThrow(
      /servers\.docs\.command: expected no command on a recorded server/,
    );
    expect(() => parseConfigText(`[servers.docs]\nrecorded = ""\n`, { file: "/x/abridge.toml", env: {} })).toThrow(/servers\.docs\.recorded/);
  });

  it.each([
    ["a missing file", undefined, "cannot read", "(ENOENT)"],
    ["invalid JSON", "{nope", "expected JSON, got invalid JSON at line 1, column 2: expected a property name in double quotes", ""],
    ["text that is no JSON, not quoted", "TOKEN=tok-5d2e\n", "expected JSON, got invalid JSON at line 1, column 1: expected a value", ""],
    ["no tools array", JSON.stringify({ result: { items: [] } }), "expected a tools array", ""],
    ["a tool without a name", JSON.stringify({ tools: [{ inputSchema: { type: "object" } }] }), "tools[0].name: expected a non-empty string, got nothing", ""],
    ["a tool without a schema", JSON.stringify([{ name: "a" }]), "tools[0].inputSchema: expected an object", ""],
    [
      "a name twice",
      JSON.stringify([
        { name: "a", inputSchema: {} },
        { name: "a", inputSchema: {} },
      ]),
      'tools[1].name: "a" appears twice',
      "",
    ],
  ])("%s is a config error naming the field, the file and the problem (exit 2)", async (_label, content, problem, extra) => {
    const file = path.join(temp.path, "bad.json");
    if (content !== undefined) await writeFile(file, content);
    const config = await writeConfig(temp.path, `[servers.bad]\nrecorded = "bad.json"\n`);
    for (const command of [["tools"], ["search", "anything"]]) {
      const r = await runAbridge([...command, "--config", config, "--cache-dir", "cache"], { cwd: temp.path });
      expect(r.code, r.stderr).toBe(2);
      expect(r.stdout).toBe("");
      expect(r.stderr).toContain(`servers.bad.recorded: `);
      expect(r.stderr).toContain(file);
      expect(r.stderr).toContain(problem);
      if (extra !== "") expect(r.stderr).toContain(extra);
      expect(r.stderr).not.toContain("tok-");
      expect(r.stderr).toContain("[CONFIG_INVALID]");
    }
  });

  it("accepts every shape render accepts: a bare array, {tools}, a JSON-RPC response, a corpus file", async () => {
    const tool = { name: "ping", description: "Answers pong.", inputSchema: { type: "object", properties: {} } };
    const shapes = {
      bare: [tool],
      list: { tools: [tool] },
      rpc: { jsonrpc: "2.0", id: 1, result: { tools: [tool] } },
      corpus: { server: "other-name", package: "x@1.0.0", serverInfo: { name: "x", version: "1.0.0" }, tools: [tool] },
    };
    for (const [name, shape] of Object.entries(shapes)) await writeFile(path.join(temp.path, `${name}.json`), JSON.stringify(shape));
    const config = await writeConfig(
      temp.path,
      Object.keys(shapes)
        .map((name) => `[servers.${name}]\nrecorded = "${name}.json"\n`)
        .join(""),
    );
    const r = await runAbridge(["tools", "--json", "--config", config, "--cache-dir", "cache"], { cwd: temp.path });
    expect(r.code, r.stderr).toBe(0);
    const names = (JSON.parse(r.stdout) as { tools: { name: string }[] }).tools.map((t) => t.name);
    expect(names).toEqual(["bare_ping", "corpus_ping", "list_ping", "rpc_ping"]);
  });

  it("a FIFO or a file over the size bound is refused unread, naming the field and the file (exit 2)", async () => {
    const fifo = path.join(temp.path, "pipe.json");
    execFileSync("mkfifo", [fifo]);
    // Sparse: the size is stated, the bytes take no room.
    const big = path.join(temp.path, "big.json");
    await writeFile(big, "");
    await truncate(big, MAX_RECORDED_BYTES + 1);
    for (const [file, problem] of [
      [fifo, "it is a FIFO, not a regular file"],
      [big, `it is ${MAX_RECORDED_BYTES + 1} bytes, over the ${MAX_RECORDED_BYTES}-byte limit`],
    ] as const) {
      const config = await writeConfig(temp.path, `[servers.bad]\nrecorded = ${JSON.stringify(file)}\n`);
      const r = await runAbridge(["tools", "--config", config, "--cache-dir", "cache"], { cwd: temp.path });
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toContain(`servers.bad.recorded: ${file}: ${problem}`);
      expect(r.stderr).toContain("[CONFIG_INVALID]");
    }
  });
});
