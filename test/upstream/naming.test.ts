import { describe, expect, it } from "vitest";
import { assignNames, parseToolUri, sanitizeName, toolUri } from "../../src/model/names.js";
import type { NameRequest } from "../../src/model/names.js";

const VALID = /^[A-Za-z0-9_-]+$/;

function shuffled<T>(items: readonly T[], seed: number): T[] {
  const out = [...items];
  let state = seed;
  for (let i = out.length - 1; i > 0; i--) {
    state = (state * 1103515245 + 12345) % 2 ** 31;
    const j = state % (i + 1);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

function nameOf(names: ReturnType<typeof assignNames>, server: string, tool: string): string {
  const found = names.find((n) => n.server === server && n.tool === tool);
  if (!found) throw new Error(`no name for ${server}/${tool}`);
  return found.name;
}

describe("assignNames", () => {
  it("prefixes with the server and the separator, or not when prefix is false", () => {
    const names = assignNames(
      [
        { server: "github", tool: "create_issue", prefix: true },
        { server: "fs", tool: "read_file", prefix: false },
      ],
      "__",
    );
    expect(nameOf(names, "github", "create_issue")).toBe("github__create_issue");
    expect(nameOf(names, "fs", "read_file")).toBe("read_file");
  });

  it("sanitizes characters outside [A-Za-z0-9_-]", () => {
    expect(sanitizeName("a.b/c d:é🙂")).toBe("a_b_c_d___");
    const names = assignNames([{ server: "my.server", tool: "get/thing v2", prefix: true }], "_");
    expect(nameOf(names, "my.server", "get/thing v2")).toBe("my_server_get_thing_v2");
  });

  it("cuts names over 64 characters and adds a 6-character hash suffix", () => {
    const tool = "x".repeat(80);
    const name = nameOf(assignNames([{ server: "srv", tool, prefix: true }], "_"), "srv", tool);
    expect(name).toHaveLength(64);
    expect(name).toMatch(VALID);
    expect(name).toMatch(/^srv_x+_[0-9a-f]{6}$/);
    // Exactly 64 is still fine as is.
    const exact = "y".repeat(60);
    expect(nameOf(assignNames([{ server: "srv", tool: exact, prefix: true }], "_"), "srv", exact)).toBe(`srv_${exact}`);
  });

  it("in a collision within one server, the name that needed no sanitizing keeps it; the others are suffixed", () => {
    const requests: NameRequest[] = [
      { server: "a", tool: "b.c", prefix: true },
      { server: "a", tool: "b/c", prefix: true },
      { server: "a", tool: "b_c", prefix: true },
    ];
    const names = assignNames(requests, "_");
    expect(new Set(names.map((n) => n.name)).size).toBe(3);
    expect(nameOf(names, "a", "b_c")).toBe("a_b_c");
    for (const tool of ["b.c", "b/c"]) {
      expect(nameOf(names, "a", tool)).toMatch(/^a_b_c_[0-9a-f]{6}$/);
      expect(names.find((n) => n.tool === tool)?.renamed).toEqual({ wanted: "a_b_c", keptBy: { server: "a", tool: "b_c" } });
    }
  });

  it("separates server and tool in the hash so shifted boundaries do not collide", () => {
    const names = assignNames(
      [
        { server: "a_b", tool: "c", prefix: true },
        { server: "a", tool: "b_c", prefix: true },
      ],
      "_",
    );
    expect(nameOf(names, "a_b", "c")).not.toBe(nameOf(names, "a", "b_c"));
  });

  it("is stable: the same names for any order of arrival and on every run", () => {
    const requests: NameRequest[] = [];
    for (let i = 0; i < 30; i++) requests.push({ server: `s${i % 3}`, tool: `tool.${i % 7}/${"z".repeat(i * 3)}`, prefix: true });
    requests.push({ server: "s0", tool: "tool_0_", prefix: true }, { server: "s1", tool: "x", prefix: false });
    const reference = assignNames(requests, "_");
    for (let seed = 1; seed <= 5; seed++) expect(assignNames(shuffled(requests, seed), "_")).toEqual(reference);
    // A hard-coded value guards against a hash that changes between machines or versions:
    // sha256("s\0" + 70 * "t"), first 6 hex digits.
    const long = "t".repeat(70);
    expect(nameOf(assignNames([{ server: "s", tool: long, prefix: true }], "_"), "s", long)).toBe(`s_${"t".repeat(55)}_532643`);
  });

  it("maps back exactly and keeps every name valid and unique", () => {
    const requests: NameRequest[] = [
      { server: "a", tool: "b_c", prefix: true },
      { server: "a_b", tool: "c", prefix: true },
      { server: "x", tool: "a_b_c", prefix: false },
      { server: "w", tool: "n".repeat(100), prefix: true },
      { server: "w", tool: `${"n".repeat(100)}!`, prefix: true },
      { server: "w", tool: "", prefix: false },
    ];
    const names = assignNames(requests, "_");
    expect(names).toHaveLength(requests.length);
    const back = new Map(names.map((n) => [n.name, { server: n.server, tool: n.tool }]));
    expect(back.size).toBe(requests.length);
    for (const request of requests) {
      const name = nameOf(names, request.server, request.tool);
      expect(name).toMatch(VALID);
      expect(name.length).toBeLessThanOrEqual(64);
      expect(back.get(name)).toEqual({ server: request.server, tool: request.tool });
    }
  });

  it("two prefix = false servers exposing the same tool: the first in config order keeps it", () => {
    const names = assignNames(
      [
        { server: "alpha", tool: "search", prefix: false, order: 1 },
        { server: "beta", tool: "search", prefix: false, order: 0 },
      ],
      "_",
    );
    expect(nameOf(names, "beta", "search")).toBe("search");
    expect(nameOf(names, "alpha", "search")).toMatch(/^search_[0-9a-f]{6}$/);
    expect(names.find((n) => n.server === "alpha")?.renamed).toEqual({ wanted: "search", keptBy: { server: "beta", tool: "search" } });
  });
});

describe("toolUri / parseToolUri", () => {
  it("round-trips and percent-encodes where needed", () => {
    expect(toolUri("github", "create_issue")).toBe("mcp://github/create_issue");
    const uri = toolUri("fs", "read file/with?odd#chars%");
    expect(uri).toBe("mcp://fs/read%20file%2Fwith%3Fodd%23chars%25");
    expect(parseToolUri(uri)).toEqual({ server: "fs", tool: "read file/with?odd#chars%" });
  });

  it("rejects what is not a tool URI", () => {
    expect(parseToolUri("http://fs/x")).toBeUndefined();
    expect(parseToolUri("mcp://fs")).toBeUndefined();
    expect(parseToolUri("mcp:///x")).toBeUndefined();
    expect(parseToolUri("mcp://fs/")).toBeUndefined();
    expect(parseToolUri("mcp://fs/%E0%A4%A")).toBeUndefined();
  });
});
