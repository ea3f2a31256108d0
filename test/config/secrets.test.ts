import { describe, expect, it } from "vitest";
import { parseConfigText } from "../../src/config/parseConfigText.js";
import { AbridgeError, ErrorCode } from "../../src/model/errors.js";
import { SecretSet } from "../../src/log/logger.js";

const SECRET = "ghp_s3cr3tT0kenValue";

function reject(text: string, secrets?: SecretSet): AbridgeError {
  try {
    parseConfigText(text, { file: "/x/abridge.toml", displayName: "abridge.toml", env: { GH_TOKEN: SECRET }, ...(secrets ? { secrets } : {}) });
  } catch (err) {
    expect(err).toBeInstanceOf(AbridgeError);
    return err as AbridgeError;
  }
  throw new Error("expected the file to be rejected");
}

function everywhere(error: AbridgeError): string {
  return `${error.message}\n${JSON.stringify(error.details)}\n${JSON.stringify(error.toJSON())}`;
}

describe("secrets expanded from the environment", () => {
  it("never appear in the error of an otherwise invalid file, and are in the SecretSet", () => {
    const secrets = new SecretSet();
    const error = reject(
      ['mode = "fast"', "[servers.gh]", 'command = "npx"', 'env = { GITHUB_PERSONAL_ACCESS_TOKEN = "${GH_TOKEN}" }', "timout_ms = 1"].join("\n"),
      secrets,
    );
    expect(error.code).toBe(ErrorCode.CONFIG_INVALID);
    expect(error.message.split("\n")).toHaveLength(2);
    expect(everywhere(error)).not.toContain(SECRET);
    expect(secrets.size).toBeGreaterThan(0);
    expect(secrets.redact(`token=${SECRET}`)).toBe("token=***");
  });

  it("are redacted when the same variable also lands in a field whose error shows its value", () => {
    const error = reject(["[servers.docs]", 'url = "${GH_TOKEN}"', 'headers = { Authorization = "Bearer ${GH_TOKEN}" }'].join("\n"));
    expect(error.message).toContain("servers.docs.url: expected an http:// or https:// URL");
    expect(everywhere(error)).not.toContain(SECRET);
  });

  it("are not shown when the field holding them is itself invalid", () => {
    const error = reject(["[servers.a]", 'command = "x"', 'env = { TOKEN = "${GH_TOKEN}", PIN = 918273 }', 'headers = ["${GH_TOKEN}"]'].join("\n"));
    expect(error.message.split("\n")).toEqual([
      "abridge.toml: servers.a.env.PIN: expected a string, got a number",
      "abridge.toml: servers.a.headers: expected a table, got an array",
    ]);
    expect(everywhere(error)).not.toContain("918273");
  });
});
