import { describe, expect, it } from "vitest";
import { globToRegExp } from "../../src/model/glob.js";
import { allowDenyOf, AllowDeny, exposesTool } from "../../src/policy/allowDeny.js";
import { ToolPolicy } from "../../src/policy/toolPolicy.js";
import type { RawTool } from "../../src/model/types.js";
import { serverConfig } from "../helpers/processes.js";

describe("globs", () => {
  it("supports * and ?, literal otherwise, case-sensitive", () => {
    expect(globToRegExp("delete_*").test("delete_repo")).toBe(true);
    expect(globToRegExp("delete_*").test("Delete_repo")).toBe(false);
    expect(globToRegExp("get?").test("gets")).toBe(true);
    expect(globToRegExp("get?").test("get")).toBe(false);
    expect(globToRegExp("a.b").test("axb")).toBe(false);
    expect(globToRegExp("a.b").test("a.b")).toBe(true);
    expect(globToRegExp("(x)+[y]").test("(x)+[y]")).toBe(true);
    // Dashes are common in tool names (notion's `API-get-user`).
    expect(globToRegExp("API-get-*").test("API-get-user")).toBe(true);
    expect(globToRegExp("a/b-c").test("a/b-c")).toBe(true);
  });

  it("deny wins over allow; no allow means everything", () => {
    const lists = new AllowDeny(["read_*", "list_*"], ["read_secret*"]);
    expect(lists.passes("read_file")).toBe(true);
    expect(lists.passes("list_dir")).toBe(true);
    expect(lists.passes("write_file")).toBe(false);
    expect(lists.passes("read_secret_key")).toBe(false);
    const denyOnly = new AllowDeny(undefined, ["rm"]);
    expect(denyOnly.passes("anything")).toBe(true);
    expect(denyOnly.passes("rm")).toBe(false);
  });
});

describe("allow/deny, one reading for the pool and the policy", () => {
  const names = ["read_file", "read_secret_key", "list_dir", "write_file", "rm", "read_", "Read_file"];
  const servers = [
    serverConfig({ name: "both", allow: ["read_*", "list_*"], deny: ["read_secret*"] }),
    serverConfig({ name: "denyOnly", deny: ["rm", "write_*"] }),
    serverConfig({ name: "open" }),
  ];

  it("what the pool exposes is what the policy's allow/deny lets through", () => {
    const policy = new ToolPolicy({ servers });
    for (const server of servers) {
      for (const name of names) {
        // Annotated read-only and non-destructive: only allow/deny can refuse it.
        const tool: RawTool = { name, inputSchema: { type: "object" }, annotations: { readOnlyHint: true } };
        expect(exposesTool(server, name), `${server.name}/${name}`).toBe(policy.check(server.name, tool).allowed);
      }
    }
    expect(names.filter((n) => exposesTool(servers[0]!, n))).toEqual(["read_file", "list_dir", "read_"]);
    expect(policy.check("both", "read_secret_key")).toMatchObject({ allowed: false, rule: 'servers.both.deny["read_secret*"]' });
  });

  it("names the glob that denies, and tells an allow list from none", () => {
    const lists = new AllowDeny(["get_*"], ["get_secret", "rm*"]);
    expect(lists.denyingGlob("rm_rf")).toBe("rm*");
    expect(lists.denyingGlob("get_user")).toBeUndefined();
    expect(lists.hasAllowList).toBe(true);
    expect(lists.allowed("get_secret")).toBe(true);
    expect(lists.passes("get_secret")).toBe(false);
    expect(new AllowDeny(undefined, []).hasAllowList).toBe(false);
  });

  it("compiles an entry once, and again when its lists are replaced", () => {
    const server = serverConfig({ name: "fs", deny: ["delete_*"] });
    expect(allowDenyOf(server)).toBe(allowDenyOf(server));
    expect(exposesTool(server, "delete_file")).toBe(false);
    server.deny = ["write_*"];
    expect(exposesTool(server, "delete_file")).toBe(true);
    expect(exposesTool(server, "write_file")).toBe(false);
    server.allow = ["read_*"];
    expect(exposesTool(server, "list_dir")).toBe(false);
  });
});
