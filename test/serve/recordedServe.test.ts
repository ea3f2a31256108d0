import { readFileSync } from "node:fs";
import { copyFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { fixtureServerToml, runAbridge, tempDir, waitForNoMarkedPids, writeConfig } from "../helpers/cliHarness.js";
import { serveOverStdio, type ServeSession } from "../helpers/serveHarness.js";

const CORPUS = path.resolve("bench/corpus/servers");

type Text = { type: string; text: string };

describe("abridge serve with a recorded server", () => {
  let dir: string;
  let cleanup: () => Promise<void>;
  let marker: string;
  let config: string;
  let session: ServeSession | undefined;
  const github = JSON.parse(readFileSync(path.join(CORPUS, "github.json"), "utf8")) as { tools: { name: string; description: string; inputSchema: unknown }[] };
  beforeEach(async () => {
    ({ dir, cleanup } = await tempDir());
    marker = `recorded-${path.basename(dir)}`;
    await copyFile(path.join(CORPUS, "github.json"), path.join(dir, "github.json"));
    // A live server beside it: a recorded server changes nothing for the others.
    config = await writeConfig(
      dir,
      [`cache_dir = "cache"`, `[servers.gh]\nrecorded = "github.json"\n`, fixtureServerToml("echo", "echoServer.ts", ["--tools", "0", "--name", marker])].join("\n"),
    );
  });
  afterEach(async () => {
    await session?.close();
    session = undefined;
    expect(await waitForNoMarkedPids(marker)).toEqual([]);
    await cleanup();
  });

  it("lists its tools, hands out their full schemas, and refuses a call with UPSTREAM_RECORDED", async () => {
    session = await serveOverStdio(config, ["--mode", "compact"]);
    const { tools } = await session.client.listTools();
    const names = tools.map((t) => t.name);
    for (const tool of github.tools) expect(names).toContain(`gh_${tool.name}`);
    expect(names).toContain("echo_echo");
    expect(names).toContain("get_schema");

    const schema = await session.client.callTool({ name: "get_schema", arguments: { tool: "gh_create_issue" } });
    expect(schema.isError).toBeFalsy();
    const original = github.tools.find((t) => t.name === "create_issue")!;
    const parsed = JSON.parse((schema.content as Text[])[0]!.text) as { server: string; description: string; inputSchema: unknown };
    expect(parsed.server).toBe("gh");
    expect(parsed.description).toBe(original.description);
    expect(parsed.inputSchema).toEqual(original.inputSchema);

    const call = await session.client.callTool({ name: "gh_create_issue", arguments: { owner: "o", repo: "r", title: "t" } });
    expect(call.isError).toBe(true);
    const text = (call.content as Text[])[0]!.text;
    expect(text).toContain("gh is a recorded server");
    expect(text).toContain("github.json");
    expect(text).toContain("cannot run them");
    expect(text).toContain("[UPSTREAM_RECORDED]");
    expect(call._meta).toEqual({ "abridge/error": { code: "UPSTREAM_RECORDED", retryable: false } });

    // The live server beside it still answers.
    const echo = await session.client.callTool({ name: "echo_echo", arguments: { text: "still here" } });
    expect(echo.isError).toBeFalsy();
    expect(JSON.stringify(echo.content)).toContain("still here");
  }, 60_000);

  it("lazy: search_tools finds recorded tools in the order `abridge search` prints, and call_tool is refused", async () => {
    // Summaries first, so serve and the CLI rank the same cached text (serve would otherwise be
    // summarizing in the background while it answers).
    const warm = await runAbridge(["summarize", "warm", "--server", "gh", "--config", config], { cwd: dir });
    expect(warm.code, warm.stderr).toBe(0);
    session = await serveOverStdio(config, ["--mode", "lazy"]);
    const query = "list pull requests of a repository";
    const searched = await session.client.callTool({ name: "search_tools", arguments: { query, limit: 5 } });
    const lines = (searched.content as Text[])[0]!.text.split("\n");
    const fromServe = lines.map((line) => /^([A-Za-z0-9_-]+)\(/.exec(line)?.[1]);
    expect(fromServe[0]).toBe("gh_list_pull_requests");

    const cli = await runAbridge(["search", query, "--limit", "5", "--json", "--config", config], { cwd: dir });
    expect(cli.code, cli.stderr).toBe(0);
    expect((JSON.parse(cli.stdout) as { name: string }[]).map((r) => r.name)).toEqual(fromServe);

    const call = await session.client.callTool({ name: "call_tool", arguments: { tool: "gh_list_pull_requests", arguments: { owner: "o", repo: "r" } } });
    expect(call.isError).toBe(true);
    expect((call.content as Text[])[0]!.text).toContain("[UPSTREAM_RECORDED]");
  }, 60_000);

  it("`servers` shows it as recorded and ready, with the file's serverInfo", async () => {
    await writeFile(path.join(dir, "small.json"), JSON.stringify({ serverInfo: { name: "small", version: "2.0.0" }, tools: [{ name: "ping", inputSchema: { type: "object" } }] }));
    const small = await writeConfig(dir, `[servers.small]\nrecorded = "small.json"\n`);
    const r = await runAbridge(["servers", "--json", "--config", small], { cwd: dir });
    expect(r.code, r.stderr).toBe(0);
    const [status] = JSON.parse(r.stdout) as { name: string; transport: string; state: string; toolCount: number; serverInfo: unknown }[];
    expect(status).toMatchObject({ name: "small", transport: "recorded", state: "ready", toolCount: 1, serverInfo: { name: "small", version: "2.0.0" } });
  });
});
