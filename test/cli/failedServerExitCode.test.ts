/**
 * The exit status of listing commands when a server could not start: the tools of the others are
 * printed, the failure is named on stderr, and the exit code is 1.
 */
import { afterEach, describe, expect, it } from "vitest";
import { fixtureServerToml, pidsWithMarker, runAbridge, writeConfig } from "../helpers/cliHarness.js";
import { useTempDir } from "../helpers/tempDir.js";

describe("listing tools with a server that failed to start", () => {
  const temp = useTempDir({ marker: "failed-server" });
  afterEach(async () => {
    expect(pidsWithMarker(temp.marker)).toEqual([]);
  });

  it("abridge tools exits 1 when a server failed to start, like abridge servers", async () => {
    const config = await writeConfig(
      temp.path,
      [
        'cache_dir = "cache"',
        fixtureServerToml("echo", "echoServer.ts", ["--tools", "1", "--name", temp.marker]),
        '[servers.broken]\ncommand = "/nonexistent/abridge-no-such-binary"\nconnect_timeout_ms = 5000\n',
      ].join("\n"),
    );
    const text = await runAbridge(["tools", "--config", config], { cwd: temp.path });
    expect(text.stdout).toContain("echo_echo");
    expect(text.stderr).toContain("abridge: server broken failed");
    expect(text.code).toBe(1);
    const json = await runAbridge(["tools", "--config", config, "--json"], { cwd: temp.path });
    expect((JSON.parse(json.stdout) as { tools: unknown[] }).tools.length).toBe(3);
    expect(json.stderr).toContain("abridge: server broken failed");
    expect(json.code).toBe(1);
  });
});
