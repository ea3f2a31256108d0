/**
 * What the code view's declarations cost: o200k tokens of the TypeScript declarations of every
 * corpus tool (one `declare namespace` per server), with and without property notes, beside the
 * compact and full lists of the same tools (OpenAI function form, as bench/tokens.ts counts them),
 * per server and pooled, with the size of one tool's declaration (what a `search_tools` answer
 * costs per tool) and the time to write them. Summaries are the extractive summarizer's, through
 * the bridge's own summary pipeline, as in the token benchmark (`--raw` leaves them out: the
 * descriptions' first sentences stand in, and the run takes seconds instead of minutes). Prints the
 * tables and writes `bench/results/declarations.json` and `declarations.md`.
 *
 *   npx tsx bench/declarations.ts [--raw]
 */
import { CodeNames } from "../src/code/declarations/codeNames.js";
import { declarations, toolDeclaration } from "../src/code/declarations/declarations.js";
import { renderTools, toOpenAiFunctions } from "../src/catalog/renderTools.js";
import type { CatalogTool } from "../src/catalog/types.js";
import { ExtractiveSummarizer } from "../src/summarize/extractiveSummarizer.js";
import { countTokens } from "../src/tokens/countTokens.js";
import { admittedTool, loadCorpus, summarizedCatalog } from "./corpus.js";
import { markdownTable, pct } from "./markdownTable.js";
import { median, nowMs, percentile, round } from "./measure.js";
import { runStandalone } from "./standalone.js";

/** o200k tokens of one server's tools (or of all) in each form. */
interface Row {
  server: string;
  tools: number;
  full: number;
  /** The full list as an MCP `tools/list` result, which carries `outputSchema` too. */
  fullMcp: number;
  /** The compact list of these tools alone (no `get_schema`). */
  compact: number;
  declarations: number;
  /** The declarations without property notes. */
  declarationsNoNotes: number;
  /** The declarations with every result `unknown` (as if no tool had an outputSchema). */
  argumentsOnly: number;
}

function listTokens(tools: readonly CatalogTool[], mode: "full" | "compact"): number {
  const names = new Set(tools.map((t) => t.name));
  const listed = renderTools(tools, mode).filter((t) => names.has(t.name));
  return countTokens(JSON.stringify(toOpenAiFunctions(listed)));
}

/** `tools` as if they declared no outputSchema. */
function withoutOutput(tools: readonly CatalogTool[]): CatalogTool[] {
  return tools.map((t) => {
    const { outputSchema: _output, ...tool } = t.tool;
    const { record: _record, ...rest } = t;
    return { ...rest, tool };
  });
}

function row(server: string, tools: readonly CatalogTool[], names: CodeNames): Row {
  return {
    server,
    tools: tools.length,
    full: listTokens(tools, "full"),
    fullMcp: countTokens(JSON.stringify({ tools: renderTools(tools, "full") })),
    compact: listTokens(tools, "compact"),
    declarations: countTokens(declarations(tools, { names })),
    declarationsNoNotes: countTokens(declarations(tools, { names, noteChars: 0 })),
    argumentsOnly: countTokens(declarations(withoutOutput(tools), { names })),
  };
}

/** Measures the declarations of every corpus tool; `raw` leaves the summaries out. */
export async function runDeclarations(raw: boolean) {
  const corpus = loadCorpus();
  const started = nowMs();
  const tools: CatalogTool[] = raw
    ? corpus.flatMap((s) =>
        s.tools.map((tool) => ({
          name: `${s.server}_${tool.name}`,
          server: s.server,
          uri: `mcp://${s.server}/${tool.name}`,
          key: `${s.server}:${tool.name}:raw`,
          tool: admittedTool(tool),
        })),
      )
    : (await summarizedCatalog(corpus, new ExtractiveSummarizer())).tools;
  const summarizeMs = nowMs() - started;
  const names = CodeNames.of(tools.map((t) => ({ server: t.server, tool: t.tool.name })));

  // Time: the first pass writes every declaration; the second finds them kept per tool content.
  const coldStart = nowMs();
  const text = declarations(tools, { names, noteChars: 81 });
  const coldMs = nowMs() - coldStart;
  const warmStart = nowMs();
  declarations(tools, { names, noteChars: 81 });
  const warmMs = nowMs() - warmStart;

  const perServer = corpus.map((s) =>
    row(
      s.server,
      tools.filter((t) => t.server === s.server),
      names,
    ),
  );
  const total = row("total", tools, names);
  const withGetSchema = countTokens(JSON.stringify(toOpenAiFunctions(renderTools(tools, "compact"))));

  const perTool = tools.map((t) => {
    const fn = names.functionOf(t.server, t.tool.name) as string;
    return {
      tool: `${t.server}:${t.tool.name}`,
      tokens: countTokens(toolDeclaration(t, fn)),
      argumentsOnly: countTokens(toolDeclaration(withoutOutput([t])[0] as CatalogTool, fn)),
      compact: listTokens([t], "compact"),
      full: listTokens([t], "full"),
    };
  });
  const sizes = perTool.map((t) => t.tokens);
  const largest = [...perTool].sort((a, b) => b.tokens - a.tokens).slice(0, 10);
  const withOutput = tools.filter((t) => t.tool.outputSchema !== undefined).length;
  const namedTypes = (text.match(/^ {4}type /gm) ?? []).length;

  return {
    startedAt: new Date().toISOString(),
    unit: "o200k_base tokens; full and compact as JSON.stringify(OpenAI function-tool list), declarations as text",
    summaries: raw ? "none (description's first sentence)" : "extractive, through the summary pipeline",
    tools: tools.length,
    servers: corpus.length,
    toolsWithOutputSchema: withOutput,
    namedTypes,
    total: { ...total, compactWithGetSchema: withGetSchema },
    shares: {
      declarationsOfFull: total.declarations / total.full,
      declarationsOfCompact: total.declarations / total.compact,
      declarationsNoNotesOfFull: total.declarationsNoNotes / total.full,
      declarationsNoNotesOfCompact: total.declarationsNoNotes / total.compact,
      argumentsOnlyOfFull: total.argumentsOnly / total.full,
      argumentsOnlyOfCompact: total.argumentsOnly / total.compact,
    },
    perTool: {
      median: median(sizes),
      p95: percentile(sizes, 95),
      max: Math.max(...sizes),
      declarationOverCompact: perTool.filter((t) => t.tokens > t.compact).length,
      declarationOverFull: perTool.filter((t) => t.tokens > t.full).length,
      argumentsOnlyOverFull: perTool.filter((t) => t.argumentsOnly > t.full).length,
      largest,
    },
    timing: { summarizeMs: round(summarizeMs, 0), coldMs: round(coldMs, 1), memoizedMs: round(warmMs, 1), chars: text.length },
    perServer,
  };
}

/** What `runDeclarations` measured. */
export type DeclarationsResult = Awaited<ReturnType<typeof runDeclarations>>;

/** The report: the forms pooled, one tool's declaration, the largest, the time, per server. */
export function declarationsMarkdown(result: DeclarationsResult): string {
  const { total, perServer } = result;
  const largest = result.perTool.largest;
  return [
    "# abridge code-view declarations",
    "",
    `Run ${result.startedAt}. ${result.tools} tools of ${result.servers} servers (${result.toolsWithOutputSchema} with an outputSchema, ${result.namedTypes} named types). Unit: ${result.unit}. Summaries: ${result.summaries}.`,
    "",
    markdownTable(
      ["form", "tokens>", "share of full>", "vs compact>"],
      [
        ["full (upstream list, OpenAI form: no outputSchema)", total.full, pct(1), pct(total.full / total.compact)],
        ["full as an MCP tools/list (with outputSchema)", total.fullMcp, pct(total.fullMcp / total.full), pct(total.fullMcp / total.compact)],
        ["compact (summary + parameter line, without get_schema)", total.compact, pct(total.compact / total.full), pct(1)],
        [
          "declarations (summary, typed arguments and results, notes <= 80 chars)",
          total.declarations,
          pct(result.shares.declarationsOfFull),
          pct(result.shares.declarationsOfCompact),
        ],
        [
          "declarations without property notes",
          total.declarationsNoNotes,
          pct(result.shares.declarationsNoNotesOfFull),
          pct(result.shares.declarationsNoNotesOfCompact),
        ],
        [
          "declarations with every result unknown (arguments only, as the lists)",
          total.argumentsOnly,
          pct(result.shares.argumentsOnlyOfFull),
          pct(result.shares.argumentsOnlyOfCompact),
        ],
      ],
    ),
    "",
    `One tool's declaration (a search answer's cost per tool): median ${result.perTool.median}, p95 ${result.perTool.p95}, max ${result.perTool.max} tokens; ` +
      `larger than its compact form for ${result.perTool.declarationOverCompact} of ${result.tools} tools, larger than its full form (OpenAI form, no outputSchema) for ${result.perTool.declarationOverFull}, ` +
      `and for ${result.perTool.argumentsOnlyOverFull} with its result left \`unknown\`.`,
    "",
    "Largest declarations:",
    "",
    markdownTable(
      ["tool", "declaration>", "arguments only>", "compact>", "full>"],
      largest.map((t) => [t.tool, t.tokens, t.argumentsOnly, t.compact, t.full]),
    ),
    "",
    `Writing every declaration: ${result.timing.coldMs} ms (${result.timing.chars.toLocaleString("en-US")} characters); again, kept per tool content: ${result.timing.memoizedMs} ms.`,
    "",
    "Per server:",
    "",
    markdownTable(
      ["server", "tools>", "full>", "full MCP>", "compact>", "declarations>", "no notes>", "arguments only>", "declarations/compact>"],
      [...perServer, total].map((r) => [
        r.server === "total" ? "**total**" : r.server,
        r.tools,
        r.full,
        r.fullMcp,
        r.compact,
        r.declarations,
        r.declarationsNoNotes,
        r.argumentsOnly,
        pct(r.declarations / r.compact),
      ]),
    ),
    "",
  ].join("\n");
}

await runStandalone(import.meta.url, {
  name: process.argv.includes("--raw") ? "declarations-raw" : "declarations",
  run: (argv) => runDeclarations(argv.includes("--raw")),
  markdown: declarationsMarkdown,
  json: (r) => r,
  markdownFile: (markdown) => markdown,
});
