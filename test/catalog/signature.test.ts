import { describe, expect, it } from "vitest";
import { compactInputSchema } from "../../src/catalog/compactSchema.js";
import { briefDescription, parameterList, toolSignature } from "../../src/catalog/signature.js";
import { corpusTool, loadCorpus } from "./corpusTools.js";

const servers = loadCorpus();
const sig = (server: string, tool: string): string => toolSignature(tool, corpusTool(servers, server, tool).inputSchema);

describe("toolSignature", () => {
  it("pins the signatures of known corpus tools", () => {
    expect(sig("github", "create_issue")).toBe("create_issue(owner, repo, title, body?, assignees?: string[], milestone?: number, labels?: string[])");
    expect(sig("github", "list_issues")).toBe(
      "list_issues(owner, repo, direction?: asc|desc, labels?: string[], page?: number, per_page?: number, since?, sort?: created|updated|comments, state?: open|closed|all)",
    );
    expect(sig("filesystem", "edit_file")).toBe("edit_file(path, edits: {oldText, newText}[], dryRun?: boolean)");
    expect(sig("memory", "create_entities")).toBe("create_entities(entities: {name, entityType, observations: string[]}[])");
    // $ref into $defs and anyOf with a JSON-string fallback.
    expect(sig("notion", "API-post-search")).toBe(
      "API-post-search(query?, sort?: {direction?, timestamp?}|string, filter?: {value?: page|data_source, property?}|string, start_cursor?, page_size?: integer)",
    );
    // A long enum is cut to its first values.
    expect(sig("chrome-devtools", "list_network_requests")).toBe(
      "list_network_requests(pageId: number, pageSize?: integer, pageIdx?: integer, resourceTypes?: (document|stylesheet|image|...)[], includePreservedRequests?: boolean)",
    );
    // gitlab's schemas ship with no type and no properties: unknown arguments, not none.
    expect(sig("gitlab", "create_issue")).toBe("create_issue(...)");
    expect(sig("playwright", "browser_close")).toBe("browser_close()");
  });

  it("beside the compact schema, keeps only what that schema cannot say", () => {
    const of = (server: string, tool: string): string => parameterList(corpusTool(servers, server, tool).inputSchema, { schemaAlongside: true });
    // Types and short enums are in the compact schema.
    expect(of("github", "list_issues")).toBe("(owner, repo, direction?, labels?, page?, per_page?, since?, sort?, state?)");
    // Nested keys and a cut long enum are not.
    expect(of("filesystem", "edit_file")).toBe("(path, edits: {oldText, newText}[], dryRun?)");
    expect(of("chrome-devtools", "list_network_requests")).toBe(
      "(pageId, pageSize?, pageIdx?, resourceTypes?: (document|stylesheet|image|...)[], includePreservedRequests?)",
    );
    expect(of("gitlab", "create_issue")).toBe("(...)");
  });

  it("survives every corpus schema and lists every required parameter", () => {
    for (const server of servers) {
      for (const tool of server.tools) {
        const signature = toolSignature(tool.name, tool.inputSchema);
        expect(signature.startsWith(`${tool.name}(`) && signature.endsWith(")"), `${server.server}:${tool.name}`).toBe(true);
        for (const name of (tool.inputSchema.required as string[] | undefined) ?? []) {
          expect(signature, `${server.server}:${tool.name}`).toMatch(new RegExp(`[(, ]${name}(?:[,:)]|$)`));
        }
      }
    }
  });

  it("handles refs that point nowhere, recursive refs, nullable unions and odd names", () => {
    const schema = {
      type: "object",
      properties: {
        a: { $ref: "#/$defs/missing" },
        tree: { $ref: "#/$defs/node" },
        maybe: { anyOf: [{ type: "integer" }, { type: "null" }] },
        "odd name": { type: "boolean" },
        map: { type: "object", additionalProperties: { type: "string" } },
      },
      required: ["a", "ghost"],
      $defs: { node: { type: "object", properties: { children: { type: "array", items: { $ref: "#/$defs/node" } } } } },
    };
    expect(toolSignature("t", schema)).toBe('t(a: any, ghost: any, tree?: {children?: any[]}, maybe?: integer, "odd name"?: boolean, map?: object)');
    expect(parameterList({ type: "object", additionalProperties: { type: "number" } })).toBe("(...)");
  });

  it("names the values a union lists beside branches that take others, then those branches' types", () => {
    const schema = {
      type: "object",
      properties: {
        freshness: {
          anyOf: [
            { type: "string", enum: ["pd", "pw"] },
            { type: "string", pattern: "^\\d{4}" },
          ],
        },
        pos: { anyOf: [{ type: "number" }, { type: "string", enum: ["top", "bottom"] }] },
        due: { anyOf: [{ const: "now" }, { type: "string" }, { type: "null" }] },
        either: { anyOf: [{ enum: ["a", "b"] }, { const: "c" }] },
      },
    };
    expect(toolSignature("t", schema)).toBe("t(freshness?: pd|pw|string, pos?: top|bottom|number, due?: now|string, either?: a|b|c)");
    // The compact schema has no enum for them (they are not every value), so the line keeps them.
    expect(parameterList(schema, { schemaAlongside: true })).toBe("(freshness?: pd|pw|string, pos?: top|bottom|number, due?: now|string, either?)");
    expect(compactInputSchema(schema).properties).toMatchObject({ pos: { type: ["number", "string"] } });
    expect(JSON.stringify(compactInputSchema(schema))).not.toContain("top");
  });
});

describe("compactInputSchema", () => {
  it("keeps names, types, short enums and required; drops prose, defaults, formats and $defs", () => {
    const notion = compactInputSchema(corpusTool(servers, "notion", "API-post-search").inputSchema);
    expect(notion).toEqual({
      type: "object",
      properties: {
        query: { type: "string" },
        sort: { type: ["object", "string"] },
        filter: { type: ["object", "string"] },
        start_cursor: { type: "string" },
        page_size: { type: "integer" },
      },
    });
    const logs = compactInputSchema(corpusTool(servers, "kubernetes", "kubectl_logs").inputSchema) as {
      properties: Record<string, unknown>;
      required: string[];
    };
    expect(logs.properties.resourceType).toEqual({ type: "string", enum: ["pod", "deployment", "job", "cronjob"] });
    expect(logs.required).toEqual(["resourceType", "name", "namespace"]);
    const chrome = compactInputSchema(corpusTool(servers, "chrome-devtools", "list_network_requests").inputSchema) as { properties: Record<string, unknown> };
    expect(chrome.properties.resourceTypes).toEqual({ type: "array", items: { type: "string" } });
    expect(compactInputSchema(corpusTool(servers, "gitlab", "create_issue").inputSchema)).toEqual({ type: "object" });
  });

  it("gives a small, prose-free schema for every corpus tool", () => {
    for (const server of servers) {
      for (const tool of server.tools) {
        const compact = compactInputSchema(tool.inputSchema);
        const text = JSON.stringify(compact);
        expect(compact.type).toBe("object");
        expect(text.length, `${server.server}:${tool.name}`).toBeLessThanOrEqual(JSON.stringify(tool.inputSchema).length + 20);
        expect(text).not.toContain("$ref");
      }
    }
  });
});

describe("briefDescription", () => {
  it("keeps the first sentence and cuts long ones on a word boundary", () => {
    expect(briefDescription("Reads a file. Then more.")).toBe("Reads a file.");
    expect(briefDescription("First line\nsecond line")).toBe("First line");
    expect(briefDescription("word ".repeat(50), 30)).toBe("word word word word word word...");
    expect(briefDescription(undefined)).toBe("");
  });
});
