import { describe, expect, it } from "vitest";
import { ArgumentValidator } from "../../src/catalog/argumentValidator.js";
import type { RawTool } from "../../src/model/types.js";
import { catalogTool, corpusTool, loadCorpus } from "./corpusTools.js";

const servers = loadCorpus();
const tool = (server: string, name: string) => catalogTool(server, corpusTool(servers, server, name));

describe("ArgumentValidator", () => {
  it("compiles every corpus schema or skips it with a reason; only gitlab's are skipped", () => {
    const validator = new ArgumentValidator();
    const skipped: string[] = [];
    for (const server of servers) {
      for (const raw of server.tools) {
        const result = validator.validate(catalogTool(server.server, raw), {});
        if (result.ok && result.skipped !== undefined) skipped.push(`${server.server}:${raw.name}`);
      }
    }
    expect(skipped.length).toBe(servers.find((s) => s.server === "gitlab")?.tools.length);
    expect(skipped.every((s) => s.startsWith("gitlab:"))).toBe(true);
    expect(validator.validate(tool("gitlab", "create_issue"), { anything: 1 })).toEqual({
      ok: true,
      skipped: "schema declares no type or properties (nothing to check)",
    });
  });

  it("reports path and message for each invalid argument", () => {
    const validator = new ArgumentValidator();
    const result = validator.validate(tool("github", "create_issue"), { owner: "o", labels: ["bug", 3], extra: true });
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.errors).toEqual(
      expect.arrayContaining([
        { path: "repo", message: "is required" },
        { path: "title", message: "is required" },
        { path: "extra", message: "is not an accepted property" },
        { path: "labels[1]", message: "must be string" },
      ]),
    );
    expect(result.text).toMatch(/^Invalid arguments for github_create_issue: .*repo is required.*labels\[1\] must be string/);
    expect(validator.validate(tool("github", "create_issue"), { owner: "o", repo: "r", title: "t" })).toEqual({ ok: true });
  });

  it("follows $ref into $defs through anyOf/oneOf (notion, draft 2020-12 dialect of chrome-devtools)", () => {
    const validator = new ArgumentValidator();
    const postPage = tool("notion", "API-post-page");
    expect(validator.validate(postPage, { parent: { page_id: "0b3a5e4c-3c59-4a3c-9b2e-6b7cdd2a7f10" }, properties: {} })).toEqual({ ok: true });
    expect(validator.validate(postPage, { parent: '{"page_id":"x"}', properties: "{}" })).toEqual({ ok: true });
    const bad = validator.validate(postPage, { parent: { page_id: 5 }, properties: {} });
    expect(bad.ok).toBe(false);
    if (!bad.ok) expect(bad.errors.some((e) => e.path.startsWith("parent"))).toBe(true);
    const navigate = tool("chrome-devtools", "navigate_page");
    const wrongEnum = validator.validate(navigate, { pageId: 1, type: "sideways" });
    expect(wrongEnum.ok).toBe(false);
    if (!wrongEnum.ok) expect(wrongEnum.errors).toContainEqual({ path: "type", message: 'must be one of "url", "back", "forward", "reload"' });
  });

  it("accepts a string-or-number union (anyOf via type list) and rejects other kinds", () => {
    const validator = new ArgumentValidator();
    const profile = tool("sentry", "get_profile_details");
    expect(validator.validate(profile, { projectSlugOrId: 42 }).ok).toBe(true);
    expect(validator.validate(profile, { projectSlugOrId: "web" }).ok).toBe(true);
    expect(validator.validate(profile, { projectSlugOrId: true }).ok).toBe(false);
  });

  it("treats missing arguments as {} and rejects non-objects", () => {
    const validator = new ArgumentValidator();
    const missing = validator.validate(tool("github", "create_issue"), undefined);
    expect(missing.ok).toBe(false);
    if (!missing.ok) expect(missing.errors.map((e) => e.path)).toEqual(["owner", "repo", "title"]);
    expect(validator.validate(tool("playwright", "browser_close"), undefined)).toEqual({ ok: true });
    const array = validator.validate(tool("playwright", "browser_close"), [1]);
    expect(array).toMatchObject({ ok: false, errors: [{ path: "(root)", message: "arguments must be an object" }] });
  });

  it("skips a schema ajv cannot compile, and compiles each key once", () => {
    const validator = new ArgumentValidator();
    const broken: RawTool = { name: "broken", inputSchema: { type: "object", properties: { a: { type: "no-such-type" } } } };
    const result = validator.validate(catalogTool("x", broken), { a: 1 });
    expect(result.ok).toBe(true);
    if (result.ok) expect(result.skipped).toMatch(/^schema does not compile: /);
    const danglingRef: RawTool = { name: "dangling", inputSchema: { type: "object", properties: { a: { $ref: "#/$defs/nope" } } } };
    expect(validator.validate(catalogTool("x", danglingRef), {})).toMatchObject({ ok: true, skipped: expect.stringMatching(/does not compile/) });
    const size = validator.size;
    validator.validate(catalogTool("x", broken), {});
    expect(validator.size).toBe(size);
  });

  it("runs patterns on a linear-time engine, with JavaScript's escapes and patternProperties", () => {
    const validator = new ArgumentValidator();
    const schema = {
      type: "object",
      properties: { id: { type: "string", pattern: "^[\\u0041-\\u005A]{2}-\\d{3}$" }, path: { type: "string", pattern: "^a/b" } },
      patternProperties: { "^x-[a-z]+$": { type: "number" } },
    };
    const t = catalogTool("x", { name: "p", inputSchema: schema });
    expect(validator.validate(t, { id: "AB-123", path: "a/bc", "x-size": 3 })).toEqual({ ok: true });
    const bad = validator.validate(t, { id: "ab-123", path: "b", "x-size": "big" });
    expect(bad.ok).toBe(false);
    if (!bad.ok) expect(bad.errors.map((e) => e.path).sort()).toEqual(["id", "path", "x-size"]);
  });

  it("leaves a lookaround or backreference pattern unchecked, names it, and checks the rest", () => {
    const validator = new ArgumentValidator();
    const schema = {
      type: "object",
      properties: { code: { type: "string", pattern: "^(?=.*\\d)[a-z0-9]+$", maxLength: 8 }, twice: { type: "string", pattern: "^(a)\\1$" } },
    };
    const t = catalogTool("x", { name: "look", inputSchema: schema });
    // "abc" has no digit: a backtracking engine would refuse it; it is left to the server.
    expect(validator.validate(t, { code: "abc", twice: "zz" })).toEqual({ ok: true, unchecked: ["^(?=.*\\d)[a-z0-9]+$", "^(a)\\1$"] });
    expect(validator.validate(t, { code: "abcdefghij" })).toMatchObject({
      ok: false,
      errors: [{ path: "code", message: "must NOT have more than 8 characters" }],
    });
    // A pattern JavaScript cannot read either is a broken schema, as before.
    const broken = catalogTool("x", { name: "broken", inputSchema: { type: "object", properties: { a: { type: "string", pattern: "(" } } } });
    expect(validator.validate(broken, { a: "x" })).toMatchObject({ ok: true, skipped: expect.stringMatching(/^schema does not compile: /) });
  });
});
