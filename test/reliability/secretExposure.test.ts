/**
 * Secrets that are easy to leak by accident: a key expanded into a URL's query string (printed
 * with every connection error), a token in an upstream's `args` or in abridge's own `--token`
 * (both readable by every local user in `ps`). URL secrets are redacted; `--token` is refused with
 * the reason and the alternatives (`$ABRIDGE_TOKEN`, `--token-file`), which work.
 */
import { chmod, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { fixtureServerToml, runAbridge, tempDir, writeConfig } from "../helpers/cliHarness.js";
import { serveOverHttp } from "../helpers/serveHarness.js";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function dirWith(toml: string): Promise<{ dir: string; config: string }> {
  const { dir, cleanup } = await tempDir("abridge-exposure-");
  cleanups.push(cleanup);
  return { dir, config: await writeConfig(dir, toml) };
}

const KEY = "k3y-in-the-query-4711";
const PASS = "pa55-in-the-userinfo";

describe("secrets on the command line and in URLs", () => {
  it("a key expanded into a URL's query string, and a literal one, never appear in output", async () => {
    const { dir, config } = await dirWith(
      [
        `[servers.api]\nurl = "http://\${API_USER}@127.0.0.1:9/mcp?api_key=\${API_KEY}&region=eu"\nconnect_timeout_ms = 3000`,
        `[servers.literal]\nurl = "http://user:${PASS}@127.0.0.1:9/mcp?token=literal-token-0815"\nconnect_timeout_ms = 3000`,
      ].join("\n"),
    );
    const runs = [
      await runAbridge(["servers", "--config", config, "--log-level", "debug"], { env: { API_KEY: KEY, API_USER: "someone" }, cwd: dir }),
      await runAbridge(["servers", "--config", config, "--json", "--log-level", "debug"], { env: { API_KEY: KEY, API_USER: "someone" }, cwd: dir }),
    ];
    const everything = runs.map((r) => `${r.stdout}\n${r.stderr}`).join("\n");
    // The URLs were shown (so the check below can fail): with the secrets masked.
    expect(everything).toContain("region=eu");
    expect(everything).toContain("token=***");
    for (const secret of [KEY, PASS, "literal-token-0815"]) expect(everything).not.toContain(secret);
  });

  it("a token variable in args is redacted and warned about", async () => {
    const { dir, config } = await dirWith(fixtureServerToml("echo", "echoServer.ts", ["--name", "${GITHUB_TOKEN}"]));
    const run = await runAbridge(["servers", "--config", config, "--log-level", "debug"], { env: { GITHUB_TOKEN: "ghp_visible_in_ps_123" }, cwd: dir });
    expect(run.stderr).toMatch(/servers\.echo\.args\[\d\] puts \$\{GITHUB_TOKEN\} on the command line .*ps.*env instead/);
    expect(`${run.stdout}${run.stderr}`).not.toContain("ghp_visible_in_ps_123");
  });

  it("serve --token is refused with the reason and what to use instead", async () => {
    const { dir, config } = await dirWith(fixtureServerToml("echo", "echoServer.ts"));
    const run = await runAbridge(["serve", "--config", config, "--http", "127.0.0.1:0", "--token", "t0ken-on-the-command-line"], { cwd: dir });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("--token is refused");
    expect(run.stderr).toContain("ps");
    expect(run.stderr).toContain("--token-file");
    expect(run.stderr).toContain("$ABRIDGE_TOKEN");
  });

  it("serve --token-file: clients need that token; an empty file is a usage error", async () => {
    const { dir, config } = await dirWith(fixtureServerToml("echo", "echoServer.ts"));
    const tokenFile = path.join(dir, "token");
    await writeFile(tokenFile, "file-token-31415\n");
    await chmod(tokenFile, 0o600);
    const serve = await serveOverHttp(config, ["--token-file", tokenFile]);
    cleanups.push(() => serve.stop());
    await expect(serve.connect()).rejects.toThrow(/401|Unauthorized|token/i);
    const client = await serve.connect({ Authorization: "Bearer file-token-31415" });
    expect((await client.listTools()).tools.some((t) => t.name === "echo_echo")).toBe(true);

    await writeFile(path.join(dir, "empty"), "\n");
    const empty = await runAbridge(["serve", "--config", config, "--http", "127.0.0.1:0", "--token-file", "empty"], { cwd: dir });
    expect(empty.code).toBe(2);
    expect(empty.stderr).toMatch(/--token-file: .*empty is empty/);
  });
});
