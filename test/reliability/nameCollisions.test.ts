/**
 * Tool names an upstream chooses can collide with another server's: `gh_delete` + `repo` and
 * `gh` + `delete_repo` both want `gh_delete_repo`; two `prefix = false` servers may both list
 * `search`. A collision must neither stop abridge (start-up exited 2) nor let a server listed later
 * take a name from one listed earlier: config order decides, the later tool is renamed, with a
 * warning, and calls reach the right server under both names.
 */
import { describe, expect, it } from "vitest";
import { fixtureToml, resultText, startBridge } from "../policy/bridgeHarness.js";
import { fixtureServerToml, runAbridge, writeConfig } from "../helpers/cliHarness.js";
import { useTempDir } from "../helpers/tempDir.js";

describe("name collisions from upstream data", () => {
  const temp = useTempDir({ prefix: "abridge-collide-" });
  it("gh_delete + repo cannot take gh_delete_repo from gh + delete_repo listed before it", async () => {
    for (const [first, second] of [
      ["gh", "gh_delete"],
      ["gh_delete", "gh"],
    ] as const) {
      const servers = {
        gh: fixtureToml("gh", "misbehavingServer.ts", ["--tool-names", "delete_repo"]),
        gh_delete: fixtureToml("gh_delete", "misbehavingServer.ts", ["--tool-names", "repo"]),
      };
      const { bridge, lines } = await startBridge(`mode = "full"\n${servers[first]}${servers[second]}`);
      const names = new Map(bridge.tools().map((t) => [`${t.server}/${t.tool.name}`, t.name]));
      const firstTool = first === "gh" ? "gh/delete_repo" : "gh_delete/repo";
      const secondTool = first === "gh" ? "gh_delete/repo" : "gh/delete_repo";
      expect(names.get(firstTool)).toBe("gh_delete_repo");
      expect(names.get(secondTool)).toMatch(/^gh_delete_repo_[0-9a-f]{6}$/);
      expect(resultText(await bridge.callTool("gh_delete_repo", {}))).toBe(`tool ${firstTool.split("/")[1]}`);
      expect(resultText(await bridge.callTool(names.get(secondTool)!, {}))).toBe(`tool ${secondTool.split("/")[1]}`);
      const warning = lines.find((l) => l.includes("tool name taken by another tool"));
      expect(warning).toContain(`keptBy=${firstTool}`);
      await bridge.close();
    }
  });

  it("two prefix = false servers with the same tool at start-up: abridge serves both, exit 0, a warning", async () => {
    const config = await writeConfig(
      temp.path,
      fixtureServerToml("one", "misbehavingServer.ts", ["--tool-names", "search"], "prefix = false") +
        fixtureServerToml("two", "misbehavingServer.ts", ["--tool-names", "search"], "prefix = false"),
    );
    const run = await runAbridge(["tools", "--config", config], { cwd: temp.path });
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^search\b/m);
    expect(run.stdout).toMatch(/^search_[0-9a-f]{6}\b/m);
    expect(run.stderr).toMatch(/tool name taken by another tool.* server=two .*wanted=search .*keptBy=one\/search/);
    const call = await runAbridge(["call", "two", "search", "--config", config], { cwd: temp.path });
    expect(call.code).toBe(0);
    expect(call.stdout).toContain("tool search");
  });
});
