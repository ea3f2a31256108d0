import { describe, expect, it } from "vitest";
import { ExtractiveSummarizer, summaryFromName } from "../../src/summarize/extractiveSummarizer.js";
import { extractSummary } from "../../src/summarize/leadSentence.js";
import { guardSummary } from "../../src/summarize/guard.js";
import { EMOJI_PATTERN } from "../../src/summarize/plainTextBlocks.js";
import { splitSentences } from "../../src/summarize/splitSentences.js";
import type { RawTool } from "../../src/model/types.js";
import { corpusTool, loadCorpusTools } from "./corpus.js";

const budget = { wordBudget: 24 };
const wordCount = (text: string): number => text.split(/\s+/).filter((w) => w.length > 0).length;
const emoji = new RegExp(EMOJI_PATTERN.source, "u");
const MARKDOWN_RESIDUE = /\*\*|__|`|\]\(|^#{1,6}\s|^\s*[-*+>]\s|\|\s*\|/;
const TAG_RESIDUE = /<\/?[A-Za-z][\w-]*(?:\s[^<>]*)?\/?>/;

function tool(name: string, description: string | undefined, extra: Partial<RawTool> = {}): RawTool {
  return {
    name,
    ...(description === undefined ? {} : { description }),
    inputSchema: { type: "object", properties: {} },
    ...extra,
  };
}

describe("extractSummary", () => {
  it("removes boilerplate openers and capitalises", () => {
    expect(extractSummary("This tool allows you to search the web for pages.", budget)).toBe("Search the web for pages.");
    expect(extractSummary("Use this tool to list files in a directory.", budget)).toBe("List files in a directory.");
    expect(extractSummary("A tool that fetches weather data for a city.", budget)).toBe("Fetches weather data for a city.");
    expect(extractSummary("Tool to create invoices in Stripe.", budget)).toBe("Create invoices in Stripe.");
    expect(extractSummary("This tool will cancel a subscription in Stripe.", budget)).toBe("Cancel a subscription in Stripe.");
    expect(extractSummary("Allows you to rename a branch.", budget)).toBe("Rename a branch.");
    expect(extractSummary("Use this when you need to export a report as CSV.", budget)).toBe("Export a report as CSV.");
    expect(extractSummary("  searches\n   the   web.  ", budget)).toBe("Searches the web.");
  });

  it("strips markdown: headings, emphasis, links, inline code, fences, lists, tables", () => {
    const text = [
      "## Overview",
      "**Searches** the [web index](https://example.com/docs) using the `query` string.",
      "",
      "```json",
      '{ "query": "cats. Dogs." }',
      "```",
      "| a | b |",
      "|---|---|",
      "- first item",
    ].join("\n");
    expect(extractSummary(text, budget)).toBe("Searches the web index using the query string.");
    expect(extractSummary("```\nexample()\n```\nDeletes a file from disk.", budget)).toBe("Deletes a file from disk.");
    expect(extractSummary("- Lists open pull requests\n- Filters by label", budget)).toBe("Lists open pull requests.");
  });

  it("drops instruction tag blocks, keeps their text when nothing else is left", () => {
    const text = "<usecase>\nUse when the user asks.\n</usecase>\n<instructions>Always call it twice.</instructions>\nFetches the forecast for a city.";
    expect(extractSummary(text, budget)).toBe("Fetches the forecast for a city.");
    expect(extractSummary("<important>Never guess.</important> Lists DNS records of a zone.", budget)).toBe("Lists DNS records of a zone.");
    expect(extractSummary("<usecase>Fetches the forecast for a city.</usecase>", budget)).toBe("Fetches the forecast for a city.");
    expect(extractSummary("Type into a <select> element.", budget)).toBe("Type into a select element.");
  });

  it("drops emoji and emoji headers", () => {
    const text = "🚀 QUICK START GUIDE:\n✨ Creates a release draft for a repository 🎉.";
    const out = extractSummary(text, budget);
    expect(out).toBe("Creates a release draft for a repository.");
    expect(emoji.test(out)).toBe(false);
  });

  it("does not split at e.g., i.e., etc. before lower case, versions, file names or URLs", () => {
    const text = "Reads settings from config.json (e.g. the app version 1.2.3, i.e. semver) at https://example.com/a.b, tags etc. and more. Second sentence.";
    expect(extractSummary(text, { wordBudget: 40 })).toBe(
      "Reads settings from config.json (e.g. the app version 1.2.3, i.e. semver) at https://example.com/a.b, tags etc. and more.",
    );
    expect(splitSentences("One sentence. Two sentences! Three? four.")).toEqual(["One sentence.", "Two sentences!", "Three? four."]);
    expect(splitSentences("Businesses, services, etc. Returns details.")).toEqual(["Businesses, services, etc.", "Returns details."]);
  });

  it("cuts at the word budget on a word boundary", () => {
    const long =
      "Search the company knowledge base for documents, tickets, wiki pages, meeting notes, design reviews, incident reports, runbooks and onboarding guides across every team and every region.";
    const out = extractSummary(long, budget);
    expect(wordCount(out)).toBeLessThanOrEqual(24);
    expect(out.length).toBeLessThan(long.length);
    expect(long.startsWith(out.replace(/…$/, ""))).toBe(true);
    expect(wordCount(extractSummary(long, { wordBudget: 8 }))).toBeLessThanOrEqual(8);
  });

  it("never makes a short description longer", () => {
    expect(extractSummary("Close the page", budget)).toBe("Close the page");
    expect(extractSummary("Merge a pull request", budget)).toBe("Merge a pull request");
  });

  it("turns a 'Server | action' prefix and list intros into a sentence", () => {
    expect(extractSummary("Notion | Retrieve a user\nError Responses:\n400: 400", budget)).toBe("Retrieve a user.");
    expect(extractSummary("Retrieve metadata about a file including:\n- size\n- owner", budget)).toBe("Retrieve metadata about a file.");
  });
});

/**
 * A sentence that is a word list rather than prose: a fragment of one or two words after the lead
 * ("Lines."; a lead such as "Create comment." is the description's own sentence), or
 * three or more comma-separated items of at most two words each with no clause among them
 * ("Multiple nested, perfect, setting, structures, projects."). Written apart from the
 * summarizer's own check so the two cannot agree by construction.
 */
function isWordList(sentence: string, lead = false): boolean {
  const body = sentence.replace(/[.!?…]+$/, "").trim();
  if (!lead && wordCount(body) <= 2) return true;
  const items = body.split(/,\s*/);
  return items.length >= 3 && items.every((item) => wordCount(item) <= 2);
}

/** Letters and digits only, lower case: how a summary's sentences are found in the original text. */
const bare = (text: string): string => text.toLowerCase().replace(/[^\p{L}\p{N}]+/gu, "");

describe("prose summaries", () => {
  it("detects the word lists earlier summaries ended with", () => {
    expect(isWordList("Lines.")).toBe(true);
    expect(isWordList("Multiple nested, perfect, setting, structures, projects.")).toBe(true);
    expect(isWordList("Gather information, multiple sources.")).toBe(false); // two items: caught by the span check below
    expect(isWordList("Resolve, reopen, assign, or ignore an issue.")).toBe(false);
  });

  it("adds the clause that tells a tool apart from its catalog, not the one every tool says", () => {
    const generic = "Results are paginated and sorted by relevance.";
    const tools = [
      tool("search_issues", `Search items in a project. ${generic} Matches issue titles and comment bodies.`),
      tool("search_merge_requests", `Search items in a project. ${generic} Filters by target branch, author and pipeline status.`),
      tool("search_wiki", `Search items in a project. ${generic} Looks through wiki pages and their revision history.`),
    ];
    const out = new ExtractiveSummarizer().summarizeCatalog(tools).map((s) => s.summary);
    expect(out).toEqual([
      "Search items in a project. Matches issue titles and comment bodies.",
      "Search items in a project. Filters by target branch, author and pipeline status.",
      "Search items in a project. Looks through wiki pages and their revision history.",
    ]);
    // summarize() sees a batch of one server's tools the same way.
    expect(new ExtractiveSummarizer().summarizeTool(tools[0] as RawTool, tools).summary).toBe(out[0]);
  });

  it("keeps the lead alone when the rest says nothing rare, and cuts a clause only at a boundary", () => {
    const tools = [
      tool("a", "Create a widget. Returns the result as JSON."),
      tool("b", "Delete a widget. Returns the result as JSON."),
      tool("c", "Rename a widget, keeping its history, owners and every stored revision of its contents. Returns the result as JSON."),
    ];
    const [a, b] = new ExtractiveSummarizer().summarizeCatalog(tools).map((s) => s.summary);
    expect(a).toBe("Create a widget.");
    expect(b).toBe("Delete a widget.");
    const small = new ExtractiveSummarizer({ wordBudget: 8 }).summarizeCatalog(tools)[2]?.summary;
    expect(small).toBe("Rename a widget, keeping its history…");
  });

  it("never appends a second clause when told not to", () => {
    const t = tool("search_wiki", "Search items in a project. Looks through wiki pages and their revision history.");
    expect(new ExtractiveSummarizer({ distinctClauses: false }).summarizeTool(t).summary).toBe("Search items in a project.");
  });
});

describe("summaryFromName", () => {
  it("builds a sentence from the name or the title", () => {
    expect(summaryFromName("get_user_profile")).toBe("Get user profile.");
    expect(summaryFromName("getUserProfile")).toBe("Get user profile.");
    expect(summaryFromName("API-get-user")).toBe("API get user.");
    expect(summaryFromName("read_file", "Read File or URL")).toBe("Read file or URL.");
  });
});

describe("ExtractiveSummarizer", () => {
  const summarizer = new ExtractiveSummarizer();

  it("summarizes an empty description from the name, never empty", async () => {
    const input = { key: "s:get_user_profile:0123456789abcdef", server: "s", tool: tool("get_user_profile", "") };
    const out = await summarizer.summarize([input]);
    expect(out.get(input.key)).toEqual({ ok: true, value: { summary: "Get user profile.", params: {} } });
    expect(summarizer.summarizeTool(tool("x_tool", undefined, { title: "Make Coffee" })).summary).toBe("Make coffee.");
    expect(summarizer.summarizeTool(tool("only_tags", "<examples>\n</examples>")).summary).toBe("Only tags.");
  });

  it("describes only top-level properties that have a description, within 10 words", () => {
    const t = tool("create_issue", "Create a new issue in a GitHub repository.", {
      inputSchema: {
        type: "object",
        required: ["title"],
        properties: {
          title: { type: "string", description: "(optional) The title of the issue to create in the repository, shown in lists and notifications." },
          body: { type: "string", description: "**Markdown** body of the issue." },
          labels: { type: "array", items: { type: "string", description: "A nested label description." } },
          assignee: { type: "string" },
        },
      },
    });
    const result = summarizer.summarizeTool(t);
    expect(Object.keys(result.params).sort()).toEqual(["body", "title"]);
    expect(result.params["body"]).toBe("Markdown body of the issue.");
    expect(result.params["title"]).not.toMatch(/optional/i);
    expect(wordCount(result.params["title"] ?? "")).toBeLessThanOrEqual(10);
    expect(guardSummary(t, result)).toEqual({ ok: true });
  });

  it("uses the configured word budget", () => {
    const small = new ExtractiveSummarizer({ wordBudget: 5 });
    const out = small.summarizeTool(tool("t", "Get a detailed listing of all files and directories in a specified path."));
    expect(wordCount(out.summary)).toBeLessThanOrEqual(5);
  });
});

describe("ExtractiveSummarizer over the whole corpus", () => {
  const corpus = loadCorpusTools();
  const summarizer = new ExtractiveSummarizer();

  it("writes a clean, short, guard-passing summary for every tool", () => {
    expect(corpus.length).toBeGreaterThanOrEqual(364);
    const problems: string[] = [];
    for (const { server, tool: t } of corpus) {
      const id = `${server}:${t.name}`;
      const { summary, params } = summarizer.summarizeTool(t);
      const original = (t.description ?? "").trim();
      if (!summary.trim()) problems.push(`${id}: empty summary`);
      if (wordCount(summary) > 24) problems.push(`${id}: ${wordCount(summary)} words`);
      if (wordCount(original) > 24 && summary.length >= original.length) problems.push(`${id}: not shorter`);
      if (MARKDOWN_RESIDUE.test(summary)) problems.push(`${id}: markdown residue in "${summary}"`);
      if (TAG_RESIDUE.test(summary)) problems.push(`${id}: tag residue in "${summary}"`);
      if (emoji.test(summary)) problems.push(`${id}: emoji in "${summary}"`);
      if (/^\p{Ll}/u.test(summary)) problems.push(`${id}: starts lower case: "${summary}"`);
      if (/^(this tool|a tool|use this|tool to|allows you)/i.test(summary)) problems.push(`${id}: boilerplate "${summary}"`);
      for (const [name, text] of Object.entries(params)) {
        if (!text.trim() || wordCount(text) > 10) problems.push(`${id}.${name}: bad param text "${text}"`);
        if (TAG_RESIDUE.test(text) || emoji.test(text) || /`|\*\*/.test(text)) problems.push(`${id}.${name}: residue "${text}"`);
      }
      const verdict = guardSummary(t, { summary, params });
      if (!verdict.ok) problems.push(`${id}: guard: ${verdict.reasons.join("; ")}`);
    }
    expect(problems).toEqual([]);
  });

  it("writes prose: every sentence is a span of the description, none a word list", () => {
    const problems: string[] = [];
    for (const server of new Set(corpus.map((t) => t.server))) {
      const tools = corpus.filter((t) => t.server === server).map((t) => t.tool);
      const summaries = summarizer.summarizeCatalog(tools);
      tools.forEach((t, i) => {
        const summary = summaries[i]?.summary ?? "";
        const source = bare(t.description ?? "");
        if (source === "") return;
        for (const [n, sentence] of splitSentences(summary).entries()) {
          if (isWordList(sentence, n === 0)) problems.push(`${server}:${t.name}: word list "${sentence}" in "${summary}"`);
          if (!source.includes(bare(sentence))) problems.push(`${server}:${t.name}: "${sentence}" is not in the description`);
        }
      });
    }
    expect(problems).toEqual([]);
  });

  // Pinned on purpose: extractive@3 writes the lead sentence and, where one adds rare words, one
  // clause of the description, summarized per server as discovery batches them.
  it("keeps what the longest descriptions are about", () => {
    const expected: Array<[string, string, string]> = [
      ["desktop-commander", "start_search", "Start a streaming search that can return results progressively."],
      ["firecrawl", "firecrawl_scrape", "Scrape content from a single URL with advanced options."],
      ["desktop-commander", "read_file", "Read contents from files and URLs. Read PDF files and extract content as markdown and images."],
      [
        "filesystem",
        "create_directory",
        "Create a new directory or ensure a directory exists. Perfect for setting up directory structures for projects or ensuring required paths exist.",
      ],
      [
        "filesystem",
        "read_text_file",
        "Read the complete contents of a file from the file system as text. Operates on the file as text regardless of extension.",
      ],
      ["sentry", "update_issue", "Update a Sentry issue's status or assignment. Resolve, reopen, assign, or ignore an issue."],
      ["context7", "resolve-library-id", "Resolves a package/product name to a Context7-compatible library ID and returns matching libraries."],
      ["stripe", "create_customer", "Create a customer in Stripe."],
      ["stripe", "update_dispute", "Submit evidence to help resolve the dispute in your favor."],
      ["notion", "API-get-user", "Retrieve a user."],
    ];
    const byServer = (server: string): RawTool[] => corpus.filter((t) => t.server === server).map((t) => t.tool);
    for (const [server, name, summary] of expected) {
      expect(summarizer.summarizeTool(corpusTool(corpus, server, name), byServer(server)).summary, `${server}:${name}`).toBe(summary);
    }
  });
});
