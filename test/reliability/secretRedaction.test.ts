/**
 * Secrets from `env` and `headers` must not appear anywhere in the output of a run: log lines at
 * debug level, error messages, `servers` output (text and JSON), the audit log. A fixture leaks
 * its token on every channel it has; the test greps everything for the values.
 */
import { readFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { fixtureServerToml, runAbridge, writeConfig } from "../helpers/cliHarness.js";
import { useTempDir } from "../helpers/tempDir.js";

const temp = useTempDir();
const SECRETS = {
  LEAKY_TOKEN: "s3cr3t-leaky-value-1234",
  WEB_TOKEN: "s3cr3t-bearer-value-5678",
  OK_TOKEN: "s3cr3t-ok-value-9012",
};

describe("secret redaction", () => {
  it("no secret value in any output of servers, call and their logs", async () => {
    const toml = [
      `audit_log = "audit.jsonl"`,
      `audit_arguments = true`,
      `cache_dir = "cache"`,
      `state_dir = "state"`,
      fixtureServerToml("leaky", "leakyServer.ts", [], 'env = { TOKEN = "${LEAKY_TOKEN}" }\nconnect_timeout_ms = 5000'),
      `[servers.web]\nurl = "http://127.0.0.1:9/mcp"\nheaders = { Authorization = "Bearer \${WEB_TOKEN}" }\nconnect_timeout_ms = 3000`,
      fixtureServerToml("ok", "annotatedServer.ts", [], 'env = { TOKEN = "${OK_TOKEN}", OTHER = "prefix-${OK_TOKEN}" }'),
    ].join("\n");
    const config = await writeConfig(temp.path, toml);
    const runs = [
      await runAbridge(["servers", "--config", config, "--log-level", "debug"], { env: SECRETS, cwd: temp.path }),
      await runAbridge(["servers", "--config", config, "--json", "--log-level", "debug"], { env: SECRETS, cwd: temp.path }),
      await runAbridge(["call", "ok", "count", "--config", config, "--log-level", "debug"], { env: SECRETS, cwd: temp.path }),
      await runAbridge(["call", "leaky", "anything", "--config", config, "--log-level", "debug"], { env: SECRETS, cwd: temp.path }),
    ];
    const everything = runs.map((r) => `${r.stdout}\n${r.stderr}`).join("\n");
    // The run did see the leaks (so the grep below can fail): the fixture's lines are there, redacted.
    expect(everything).toContain("leaky fixture: my token is ***");
    expect(runs[2]!.stdout).toContain("1");
    const audit = await readFile(path.join(temp.path, "audit.jsonl"), "utf8").catch(() => "");
    for (const value of Object.values(SECRETS)) {
      expect(everything, `secret ${value} leaked into the output`).not.toContain(value);
      expect(audit).not.toContain(value);
    }
  });
});
