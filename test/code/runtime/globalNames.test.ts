import { describe, expect, it } from "vitest";
import { assignIdentifiers, codeNames, toIdentifier } from "../../../src/code/runtime/globalNames.js";

describe("program globals", () => {
  it("makes a name an identifier: others become _, a leading digit gets a prefix, a reserved word or taken global a suffix", () => {
    expect(toIdentifier("my-server")).toBe("my_server");
    expect(toIdentifier("a.b c/d")).toBe("a_b_c_d");
    expect(toIdentifier("2fa")).toBe("_2fa");
    expect(toIdentifier("")).toBe("_");
    expect(toIdentifier("delete")).toBe("delete_");
    expect(toIdentifier("class")).toBe("class_");
    expect(toIdentifier("tools")).toBe("tools_");
    expect(toIdentifier("console")).toBe("console_");
    expect(toIdentifier("JSON")).toBe("JSON_");
    expect(toIdentifier("$ok_1")).toBe("$ok_1");
    expect(toIdentifier("ünï")).toBe("_n_");
  });

  it("settles names that meet on one identifier the same way whatever their order", () => {
    const a = assignIdentifiers(["get-item", "get_item", "get.item"]);
    const b = assignIdentifiers(["get.item", "get_item", "get-item"]);
    expect([...a.entries()].sort()).toEqual([...b.entries()].sort());
    expect(a.get("get_item")).toBe("get_item");
    expect(new Set(a.values()).size).toBe(3);
    expect([a.get("get-item"), a.get("get.item")].sort()).toEqual(["get_item_2", "get_item_3"]);
  });

  it("gives each server a global and each tool a method, keeping the exposed name calls go to", () => {
    const names = codeNames([
      {
        name: "my-server",
        tools: [
          { name: "list-items", exposed: "my-server_list-items" },
          { name: "delete", exposed: "my-server_delete" },
        ],
      },
      { name: "my_server", tools: [] },
      { name: "console", tools: [] },
    ]);
    expect(names.map((s) => s.identifier)).toEqual(["my_server_2", "my_server", "console_"]);
    expect(names[0]!.tools).toEqual([
      { name: "list-items", exposed: "my-server_list-items", method: "list_items" },
      { name: "delete", exposed: "my-server_delete", method: "delete_" },
    ]);
  });

  it("uses identifiers the host settles, and refuses ones a program could not use", () => {
    const names = codeNames([{ name: "fs", identifier: "files", tools: [{ name: "read", exposed: "fs_read", method: "readFile" }] }]);
    expect(names[0]).toMatchObject({ identifier: "files", tools: [{ method: "readFile", exposed: "fs_read" }] });
    expect(() => codeNames([{ name: "fs", identifier: "not-an-identifier", tools: [] }])).toThrow(/not an identifier/);
    expect(() => codeNames([{ name: "fs", identifier: "tools", tools: [] }])).toThrow(/not an identifier/);
    expect(() =>
      codeNames([
        { name: "a", identifier: "x", tools: [] },
        { name: "b", identifier: "x", tools: [] },
      ]),
    ).toThrow(/given twice/);
  });
});
