import { mkdir, realpath, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { isAbridgeError, messageOf } from "../../../src/model/errors.js";
import { loadManifests, parseManifest, renderManifestProblem } from "../../../src/upstream/jsonrpc/jsonRpcManifests.js";
import { useTempDir } from "../../helpers/tempDir.js";

const tool = (name: string, extra: Record<string, unknown> = {}) => ({ name, inputSchema: { type: "object" }, ...extra });
const manifest = (id: string, tools: unknown[], methods: Record<string, unknown>) => JSON.stringify({ id, tools, implementation: { methods } });

describe("JSON-RPC manifests", () => {
  const temp = useTempDir({ prefix: "abridge-manifests-" });

  it("reads every *.json below the folder in path order, skipping dot names and symlinked folders", async () => {
    await mkdir(path.join(temp.path, "b", "deep"), { recursive: true });
    await mkdir(path.join(temp.path, ".hidden"));
    await writeFile(path.join(temp.path, "a.json"), manifest("a", [tool("one")], { one: "m.one" }));
    await writeFile(path.join(temp.path, "b", "deep", "c.json"), manifest("c", [tool("two")], { two: "m.two" }));
    await writeFile(path.join(temp.path, "b", "notes.txt"), "not a manifest");
    await writeFile(path.join(temp.path, ".#a.json"), "{ an editor's lock file");
    await writeFile(path.join(temp.path, ".hidden", "h.json"), manifest("h", [tool("hidden")], { hidden: "m.h" }));
    // A link back to the folder itself: followed, the walk would never end.
    await symlink(temp.path, path.join(temp.path, "b", "loop"));
    const set = await loadManifests(temp.path, "servers.x.manifests");
    expect(set.files).toBe(2);
    expect(set.tools.map((t) => [t.tool.name, t.method])).toEqual([
      ["one", "m.one"],
      ["two", "m.two"],
    ]);
    expect(set.problems).toEqual([]);
  });

  it("keeps unknown tool keys, drops mcpExpose, and hides unexposed and unmapped tools with the reason", () => {
    const parsed = parseManifest(
      manifest(
        "m",
        [
          tool("kept", { title: "Kept", annotations: { readOnlyHint: true }, "x-vendor": 1, mcpExpose: true }),
          tool("off", { mcpExpose: false }),
          tool("unmapped"),
        ],
        {
          kept: "do.kept",
          off: "do.off",
        },
      ),
      "/m.json",
    );
    expect(parsed.tools.map((t) => t.tool)).toEqual([
      { name: "kept", title: "Kept", inputSchema: { type: "object" }, annotations: { readOnlyHint: true }, "x-vendor": 1 },
    ]);
    expect(parsed.hidden).toEqual([
      { file: "/m.json", tool: "off", kind: "mcpExpose", reason: "mcpExpose is false" },
      { file: "/m.json", tool: "unmapped", kind: "unmapped", reason: 'implementation.methods has no method for "unmapped"' },
    ]);
  });

  it.each([
    ["invalid JSON", "{", "/m.json: expected JSON, got invalid JSON at line 1, column 2: expected a property name in double quotes"],
    ["an array", "[]", "/m.json: expected a manifest object {id, tools, implementation}, got an array"],
    ["no id", JSON.stringify({ tools: [], implementation: { methods: {} } }), "/m.json: id: expected a non-empty string, got nothing"],
    [
      "tools not an array",
      JSON.stringify({ id: "m", tools: {}, implementation: { methods: {} } }),
      "/m.json: tools: expected an array of tools, got an object",
    ],
    ["no implementation", JSON.stringify({ id: "m", tools: [] }), "/m.json: implementation: expected an object with `methods`, got nothing"],
    [
      "methods not an object",
      JSON.stringify({ id: "m", tools: [], implementation: { methods: [] } }),
      "/m.json: implementation.methods: expected an object mapping tool names to JSON-RPC methods, got an array",
    ],
  ])("a manifest with %s fails as a whole, naming the file and the field", (_label, text, message) => {
    let error: unknown;
    try {
      parseManifest(text, "/m.json");
    } catch (err) {
      error = err;
    }
    expect(isAbridgeError(error, "CONFIG_INVALID")).toBe(true);
    expect(messageOf(error)).toContain(message);
  });

  it("skips a bad tool and keeps the rest of its file", () => {
    const parsed = parseManifest(
      manifest(
        "m",
        [tool("ok"), "not a tool", { name: "", inputSchema: {} }, { name: "noschema" }, tool("ok"), tool("bad_method"), tool("desc", { description: 7 })],
        {
          ok: "m.ok",
          bad_method: 42,
          desc: "m.desc",
          ghost: "m.ghost",
        },
      ),
      "/m.json",
    );
    expect(parsed.tools.map((t) => t.tool.name)).toEqual(["ok"]);
    expect(parsed.problems.map(renderManifestProblem)).toEqual([
      "/m.json: tools[1]: expected an object, got a string",
      "/m.json: tools[2].name: expected a non-empty string, got an empty string",
      "/m.json: tools[3].inputSchema: expected a JSON Schema object, got nothing",
      '/m.json: tools[4].name: "ok" is declared twice in this manifest; the first is kept',
      "/m.json: implementation.methods.bad_method: expected the name of a JSON-RPC method, got a number; the tool is not exposed",
      "/m.json: tools[6].description: expected a string, got a number",
      "/m.json: implementation.methods.ghost: maps a method to a tool this manifest does not declare; ignored",
    ]);
  });

  it("gives a tool declared by two files to the first, and reports the second with its field", async () => {
    await writeFile(path.join(temp.path, "a.json"), manifest("a", [tool("same")], { same: "a.same" }));
    await writeFile(path.join(temp.path, "b.json"), manifest("b", [tool("other"), tool("same")], { other: "b.other", same: "b.same" }));
    const set = await loadManifests(temp.path, "servers.x.manifests");
    expect(set.tools.map((t) => `${t.tool.name}:${t.method}`)).toEqual(["same:a.same", "other:b.other"]);
    expect(set.problems.map(renderManifestProblem)).toEqual([
      `${path.join(temp.path, "b.json")}: tools[1].name: "same" is already declared by ${path.join(temp.path, "a.json")}; this declaration is skipped`,
    ]);
  });

  it("a folder that is not there, or not a folder, is a config error naming the field", async () => {
    await expect(loadManifests(path.join(temp.path, "none"), "servers.x.manifests")).rejects.toThrow(
      `servers.x.manifests: cannot read the manifests folder ${path.join(temp.path, "none")} (ENOENT)`,
    );
    await writeFile(path.join(temp.path, "file.json"), "{}");
    await expect(loadManifests(path.join(temp.path, "file.json"), "servers.x.manifests")).rejects.toThrow(
      `servers.x.manifests: ${path.join(temp.path, "file.json")} is not a folder`,
    );
  });
  it("refuses a symbolic link that leads out of the folder, naming the link and quoting nothing of its target", async () => {
    const outside = path.join(temp.path, "outside");
    const folder = path.join(temp.path, "manifests");
    await mkdir(outside);
    await mkdir(path.join(folder, "data"), { recursive: true });
    // What /proc/self/environ holds: were it read, invalid JSON whose first bytes V8 quotes.
    const secret = path.join(outside, "environ");
    await writeFile(secret, "ABRIDGE_TOKEN=tok-4f1c9e\0HOME=/root\0");
    await symlink(secret, path.join(folder, "env.json"));
    // A link to a manifest outside is refused too, though it would parse.
    await writeFile(path.join(outside, "m.json"), manifest("out", [tool("escaped")], { escaped: "m.escaped" }));
    await symlink(path.join(outside, "m.json"), path.join(folder, "escaped.json"));
    // A link that stays inside is read, also when the folder is reached through a link itself.
    await writeFile(path.join(folder, "data", "kept.txt"), manifest("kept", [tool("kept")], { kept: "m.kept" }));
    await symlink(path.join("data", "kept.txt"), path.join(folder, "kept.json"));
    await symlink(folder, path.join(temp.path, "current"));

    // Named by their real paths (the temp folder may itself be reached through a link).
    const [realSecret, realOutside, realFolder] = await Promise.all([secret, path.join(outside, "m.json"), folder].map((p) => realpath(p)));
    for (const root of [folder, path.join(temp.path, "current")]) {
      const set = await loadManifests(root, "servers.x.manifests");
      expect(set.tools.map((t) => t.tool.name)).toEqual(["kept"]);
      const lines = set.problems.map(renderManifestProblem);
      expect(lines).toEqual([
        `${path.join(root, "env.json")}: a symbolic link to ${realSecret}, outside the manifests folder ${realFolder}; not read`,
        `${path.join(root, "escaped.json")}: a symbolic link to ${realOutside}, outside the manifests folder ${realFolder}; not read`,
      ]);
      expect(lines.join("\n")).not.toContain("tok-4f1c9e");
    }
  });

  it("says where a manifest's JSON breaks without quoting any of it", async () => {
    await writeFile(path.join(temp.path, "env.json"), "ABRIDGE_TOKEN=tok-4f1c9e\nHOME=/root\n");
    await writeFile(path.join(temp.path, "late.json"), '{\n  "id": "m",\n  "tools": [tok-77aa31]\n}');
    const set = await loadManifests(temp.path, "servers.x.manifests");
    const lines = set.problems.map(renderManifestProblem);
    expect(lines).toEqual([
      `${path.join(temp.path, "env.json")}: expected JSON, got invalid JSON at line 1, column 1: expected a value (string, number, object, array, true, false or null)`,
      `${path.join(temp.path, "late.json")}: expected JSON, got invalid JSON at line 3, column 13: expected a value (string, number, object, array, true, false or null)`,
    ]);
    expect(lines.join("\n")).not.toContain("tok-");
  });
});
