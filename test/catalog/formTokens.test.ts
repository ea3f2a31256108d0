/**
 * Lists choose between a tool's forms by the token counts its cache entry keeps, never by counting
 * at serve time: on a sample of corpus tools the forms chosen by stored counts are the forms
 * chosen by counting each candidate (under the measured name and another one), counts of another
 * renderer version are ignored, and a tool without counts gets forms that still keep
 * compact <= summary <= full.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { RENDERER_VERSION, renderTools, summaryTokens, toOpenAiFunctions, type CompactSchema } from "../../src/catalog/renderTools.js";
import type { CatalogTool, ListedTool } from "../../src/catalog/types.js";
import { countTokens } from "../../src/tokens/countTokens.js";
import { corpusCatalog, withFormTokens } from "./corpusTools.js";

const SEED = 20261127;
const catalog = corpusCatalog();
const SCHEMAS: readonly CompactSchema[] = ["names", "types", "none"];

/** o200k tokens of one listed tool (OpenAI function form), as the entries count them. */
function tokens(tool: ListedTool): number {
  return countTokens(JSON.stringify(toOpenAiFunctions([tool])[0]));
}

/** The one tool's form in `mode` (compact's get_schema left out). */
function formOf(tool: CatalogTool, mode: "summary" | "compact", schema: CompactSchema = "none"): ListedTool {
  const listed = renderTools([tool], mode, { compactSchema: schema }).filter((t) => t.name === tool.name);
  expect(listed).toHaveLength(1);
  return listed[0]!;
}

/**
 * The raw renderings, got through the public renderer by counts that force each choice: summary
 * and compact zero, full one, makes both lists take the rendering itself.
 */
function renderings(tool: CatalogTool): { full: ListedTool; summary: ListedTool; compact: Record<CompactSchema, ListedTool> } {
  const forced: CatalogTool = { ...tool, formTokens: { renderer: RENDERER_VERSION, full: 1, summary: 0, names: 0, types: 0, none: 0 } };
  return {
    full: renderTools([tool], "full")[0]!,
    summary: formOf(forced, "summary"),
    compact: { names: formOf(forced, "compact", "names"), types: formOf(forced, "compact", "types"), none: formOf(forced, "compact", "none") },
  };
}

/** What counting each candidate at serve time would choose: the rule the stored counts stand in for. */
function countedChoice(tool: CatalogTool): { summary: ListedTool; compact: Record<CompactSchema, ListedTool> } {
  const r = renderings(tool);
  const summary = tokens(r.summary) <= tokens(r.full) ? r.summary : r.full;
  const compactOf = (schema: CompactSchema): ListedTool => (tokens(r.compact[schema]) <= tokens(summary) ? r.compact[schema] : summary);
  return { summary, compact: { names: compactOf("names"), types: compactOf("types"), none: compactOf("none") } };
}

const sample = fc.integer({ min: 0, max: catalog.length - 1 }).map((i) => catalog[i]!);

describe("choosing forms by stored counts", () => {
  it("an entry's counts are its renderings' counts, of this renderer version", () => {
    const tool = catalog.find((t) => t.name === "github_create_issue");
    if (tool?.summary === undefined) throw new Error("corpus tool missing");
    const measured = summaryTokens({ key: tool.key, server: tool.server, tool: tool.tool, name: tool.name }, tool.summary);
    const r = renderings(tool);
    expect(measured.formTokens).toEqual({
      renderer: RENDERER_VERSION,
      full: tokens(r.full),
      summary: tokens(r.summary),
      names: tokens(r.compact.names),
      types: tokens(r.compact.types),
      none: tokens(r.compact.none),
    });
    expect(measured.tokensBefore).toBe(measured.formTokens?.full);
    expect(measured.tokensAfter).toBe(Math.min(measured.formTokens!.full, measured.formTokens!.summary));
  });

  it("chooses what counting would, on a sample of corpus tools, under the measured name and another", () => {
    let summarized = 0;
    let compacted = 0;
    fc.assert(
      fc.property(sample, fc.boolean(), (tool, rename) => {
        expect(tool.formTokens?.renderer).toBe(RENDERER_VERSION);
        // Counts measured under one name serve the tool under another (a changed separator).
        const served: CatalogTool = rename ? { ...tool, name: `x${tool.name.length % 3 === 0 ? "-" : "__"}${tool.name}9` } : tool;
        const expected = countedChoice(withFormTokens(served));
        expect(formOf(served, "summary")).toStrictEqual(expected.summary);
        if (JSON.stringify(expected.summary) !== JSON.stringify(renderTools([served], "full")[0])) summarized += 1;
        for (const schema of SCHEMAS) {
          expect(formOf(served, "compact", schema), schema).toStrictEqual(expected.compact[schema]);
        }
        if (JSON.stringify(expected.compact.none) !== JSON.stringify(expected.summary)) compacted += 1;
      }),
      { seed: SEED, numRuns: 150 },
    );
    // Both sides of each choice were met.
    expect(summarized).toBeGreaterThan(0);
    expect(compacted).toBeGreaterThan(0);
  });

  it("ignores counts of another renderer version: the tool is chosen for as if it had none", () => {
    const countless = (t: CatalogTool): CatalogTool => {
      const { formTokens: _counts, ...rest } = t;
      return rest;
    };
    // A tool whose summary form without counts is the summary rendering, so that counts saying
    // full is smaller visibly change it.
    const tool = catalog.find((t) => JSON.stringify(formOf(countless(t), "summary")) !== JSON.stringify(renderTools([t], "full")[0]));
    if (tool === undefined) throw new Error("no corpus tool whose summary is surely smaller");
    const none = countless(tool);
    // Counts that would turn every choice around: full smallest, compact largest.
    const upsideDown = (renderer: number): CatalogTool => ({ ...tool, formTokens: { renderer, full: 1, summary: 50, names: 90, types: 90, none: 90 } });
    // Of this version they are followed as they are: the choice reads the counts, not the text.
    const current = upsideDown(RENDERER_VERSION);
    expect(formOf(current, "summary")).toStrictEqual(renderTools([tool], "full")[0]);
    expect(formOf(none, "summary")).not.toStrictEqual(renderTools([tool], "full")[0]);
    for (const renderer of [RENDERER_VERSION - 1, RENDERER_VERSION + 1]) {
      if (renderer < 1) continue;
      const stale = upsideDown(renderer);
      expect(formOf(stale, "summary")).toStrictEqual(formOf(none, "summary"));
      for (const schema of SCHEMAS) expect(formOf(stale, "compact", schema)).toStrictEqual(formOf(none, "compact", schema));
    }
  });

  it("keeps compact <= summary <= full in tokens for tools without counts, summarized or not", () => {
    const bare = (tool: CatalogTool, keepSummary: boolean): CatalogTool => {
      const { formTokens: _f, summary, ...rest } = tool;
      return keepSummary && summary !== undefined ? { ...rest, summary } : rest;
    };
    fc.assert(
      fc.property(sample, fc.boolean(), (tool, keepSummary) => {
        const t = bare(tool, keepSummary);
        const full = tokens(renderTools([t], "full")[0]!);
        const summary = tokens(formOf(t, "summary"));
        expect(summary).toBeLessThanOrEqual(full);
        for (const schema of SCHEMAS) expect(tokens(formOf(t, "compact", schema))).toBeLessThanOrEqual(summary);
      }),
      { seed: SEED, numRuns: 150 },
    );
  });
});
