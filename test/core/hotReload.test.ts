/** What a hot reload puts in force: the edited config, except the settings fixed at start. */
import { describe, expect, it } from "vitest";
import { parseConfigText } from "../../src/config/parseConfigText.js";
import { reloadedConfig } from "../../src/core/hotReload.js";

const parse = (toml: string) => parseConfigText(toml, { file: "/cfg/abridge.toml", env: {} });
const server = '[servers.a]\ncommand = "node"\n';

describe("reloadedConfig", () => {
  it("takes server edits and names every setting kept until a restart", () => {
    const running = parse(`mode = "compact"\naudit_log = "/a.jsonl"\npin = ["x_*"]\ntoken_budget = 1000\n${server}`);
    const edited = parse(
      `mode = "full"\nseparator = "__"\naudit_log = "/b.jsonl"\naudit_arguments = true\npin = ["y_*"]\ntoken_budget = 1000\nstartup_grace_ms = 5\n${server}timeout_ms = 7\n`,
    );
    const { config, needsRestart } = reloadedConfig(running, edited);
    expect(needsRestart).toEqual(["mode", "separator", "audit_log", "audit_arguments", "pin"]);
    expect(config).toMatchObject({ mode: "compact", separator: "_", audit_log: "/a.jsonl", audit_arguments: false, pin: ["x_*"], startup_grace_ms: 5 });
    expect(config.servers[0]?.timeout_ms).toBe(7);
  });

  it("needs no restart when only live settings change, and compares tables by content", () => {
    const running = parse(`[summary]\nword_budget = 30\n${server}`);
    const edited = parse(`[summary]\nword_budget = 30\n${server}timeout_ms = 9\n`);
    expect(reloadedConfig(running, edited).needsRestart).toEqual([]);
    const summaryEdit = parse(`[summary]\nword_budget = 40\n${server}`);
    const { config, needsRestart } = reloadedConfig(running, summaryEdit);
    expect(needsRestart).toEqual(["summary"]);
    expect(config.summary.word_budget).toBe(30);
  });

  it("keeps the shared cache (cache_url, cache_lease_ms) until a restart: the store is opened once", () => {
    const running = parse(`cache_url = "redis://127.0.0.1:6379/0"\n${server}`);
    const edited = parse(`cache_url = "redis://127.0.0.1:6380/1"\ncache_lease_ms = 5000\n${server}`);
    const { config, needsRestart } = reloadedConfig(running, edited);
    expect(needsRestart).toEqual(["cache_url", "cache_lease_ms"]);
    expect(config).toMatchObject({ cache_url: "redis://127.0.0.1:6379/0", cache_lease_ms: 30_000 });
  });
});
