import { writeFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { isAbridgeError, messageOf } from "../../../src/model/errors.js";
import { exposesTool } from "../../../src/policy/allowDeny.js";
import { UpstreamPool } from "../../../src/upstream/upstreamPool.js";
import { serverConfig } from "../../helpers/processes.js";
import { useTempDir } from "../../helpers/tempDir.js";

const TOOLS = [
  { name: "read_page", description: "Reads a page.", inputSchema: { type: "object", properties: { id: { type: "string" } } } },
  { name: "write_page", description: "Writes a page.", inputSchema: { type: "object", properties: { id: { type: "string" } } } },
];

describe("a recorded server in the upstream pool", () => {
  const temp = useTempDir();
  let pool: UpstreamPool | undefined;
  afterEach(async () => {
    await pool?.close();
    pool = undefined;
  });

  const recorded = (name: string, file: string, fields = {}) => serverConfig({ name, transport: "recorded", recorded: path.join(temp.path, file), ...fields });

  it("applies allow/deny, refuses calls and other requests with UPSTREAM_RECORDED, and has no resources", async () => {
    await writeFile(path.join(temp.path, "wiki.json"), JSON.stringify({ tools: TOOLS }));
    pool = new UpstreamPool({ servers: [recorded("wiki", "wiki.json", { deny: ["write_*"] })], separator: "_", exposes: exposesTool });
    await pool.start();
    expect(pool.tools().map((t) => t.name)).toEqual(["wiki_read_page"]);
    expect(pool.pids()).toEqual([]);
    const call = pool.callTool("wiki", "read_page", { id: "1" });
    await expect(call).rejects.toMatchObject({ code: "UPSTREAM_RECORDED", retryable: false });
    await expect(call).rejects.toThrow(/wiki is a recorded server .*wiki\.json/);
    await expect(pool.request("wiki", "resources/read", { uri: "x" })).rejects.toMatchObject({ code: "UPSTREAM_RECORDED" });
    expect(await pool.listAll("wiki", "resources/list", "resources")).toEqual([]);
    expect(await pool.recordTools("wiki")).toEqual(TOOLS);
  });

  it("a bad file fails the pool's start with CONFIG_INVALID; after a reload it only marks the server failed", async () => {
    await writeFile(path.join(temp.path, "bad.json"), JSON.stringify({ tools: [{ name: "" }] }));
    pool = new UpstreamPool({ servers: [recorded("bad", "bad.json")], separator: "_", exposes: exposesTool });
    const error = await pool.start().catch((err: unknown) => err);
    expect(isAbridgeError(error, "CONFIG_INVALID")).toBe(true);
    expect(messageOf(error)).toContain(`servers.bad.recorded: ${path.join(temp.path, "bad.json")}: tools[0].name`);
    await pool.close();

    await writeFile(path.join(temp.path, "good.json"), JSON.stringify(TOOLS));
    pool = new UpstreamPool({ servers: [recorded("good", "good.json")], separator: "_", exposes: exposesTool });
    await pool.start();
    await pool.reconfigure([recorded("good", "good.json"), recorded("bad", "bad.json")]);
    expect(pool.status("bad")).toMatchObject({ state: "failed", error: { code: "CONFIG_INVALID" } });
    expect(pool.tools().map((t) => t.name)).toEqual(["good_read_page", "good_write_page"]);
  });

  it("refresh reads the file again and reports a changed list", async () => {
    const file = path.join(temp.path, "wiki.json");
    await writeFile(file, JSON.stringify(TOOLS.slice(0, 1)));
    pool = new UpstreamPool({ servers: [recorded("wiki", "wiki.json")], separator: "_", exposes: exposesTool });
    await pool.start();
    const changed: string[] = [];
    pool.on("toolsChanged", (server) => changed.push(server));
    await writeFile(file, JSON.stringify(TOOLS));
    await pool.refresh();
    expect(changed).toEqual(["wiki"]);
    expect(pool.tools().map((t) => t.name)).toEqual(["wiki_read_page", "wiki_write_page"]);
  });

  it("names a recorded server's tools by the time it settles, before the pool's start has finished", async () => {
    const servers = [];
    for (let i = 0; i < 5; i++) {
      await writeFile(path.join(temp.path, `w${i}.json`), JSON.stringify(TOOLS));
      servers.push(recorded(`w${i}`, `w${i}.json`));
    }
    pool = new UpstreamPool({ servers, separator: "_", exposes: exposesTool });
    const changed: string[] = [];
    pool.on("toolsChanged", (server) => changed.push(server));
    const started = pool.start();
    // What a front end does for its first tools/list: wait for the servers to settle, then list.
    expect(await pool.waitSettled(undefined, 60_000)).toBe(true);
    expect(pool.tools().map((t) => t.name)).toEqual(servers.flatMap((s) => [`${s.name}_read_page`, `${s.name}_write_page`]));
    expect(changed.join(",").split(",").sort()).toEqual(servers.map((s) => s.name).sort());
    await started;
  });
});
