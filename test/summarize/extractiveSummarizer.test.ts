import { describe, expect, it } from "vitest";
import {
  ExtractiveSummarizer,
  extractSummary,
  summaryFromName,
} from "../../src/summarize/extractiveSummarizer.js";
import { guardSummary } from "../../src/summarize/guard.js";
import { EMOJI_PATTERN } from "../../src/summarize/plainTextBlocks.js";
import { splitSentences } from "../../src/summarize/splitSentences.js";
import type { RawTool } from "../../src/upstream/types.js";
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
    expect(extractSummary("<important>Never guess.</important> Lists DNS records of a zone.", budget)).toBe(
      "Lists DNS records of a zone.",
    );
    expect(extractSummary("<usecase>Fetches the forecast for a city.</usecase>", budget)).toBe(
      "Fetches the forecast for a city.",
    );
    expect(extractSummary("Type into a <select> element.", budget)).toBe("Type into a select element.");
  });

  it("drops emoji and emoji headers", () => {
    const text = "🚀 QUICK START GUIDE:\n✨ Creates a release draft for a repository 🎉.";
    const out = extractSummary(text, budget);
    expect(out).toBe("Creates a release draft for a repository.");
    expect(emoji.test(out)).toBe(false);
  });

  it("does not split at e.g., i.e., etc. before lower case, versions, file names or URLs", () => {
    const text =
      "Reads settings from config.json (e.g. the app version 1.2.3, i.e. semver) at https://example.com/a.b, tags etc. and more. Second sentence.";
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
    expect(extractSummary("Retrieve metadata about a file including:\n- size\n- owner", budget)).toBe(
      "Retrieve metadata about a file.",
    );
  });
});

describe("detail phrases", () => {
  const description =
    "Perform research on a topic. Use this tool when you need to gather information from multiple sources. " +
    "Returns a detailed response. Never call it twice.";

  it("appends words from later sentences that the lead and the names do not say", () => {
    const out = extractSummary(description, { wordBudget: 24, detailWords: 6, knownWords: ["research_topic", "input"] });
    // "detailed response" is filler that every tool could say: no detail.
    expect(out).toBe("Perform research on a topic. Gather information, multiple sources.");
    // The lead alone without a detail budget, as parameter descriptions get.
    expect(extractSummary(description, { wordBudget: 24 })).toBe("Perform research on a topic.");
  });

  it("stays within the word budget and never repeats a known word", () => {
    const out = extractSummary(description, { wordBudget: 8, detailWords: 6, knownWords: ["gather_information"] });
    expect(wordCount(out)).toBeLessThanOrEqual(8);
    expect(out.startsWith("Perform research on a topic. ")).toBe(true);
    expect(out).not.toMatch(/gather|information/i);
  });

  it("skips identifiers, URLs and file names", () => {
    const out = extractSummary(
      "Connect to a database. See https://example.com/docs, call list_connections or connectionInfo first; reads config.json.",
      { wordBudget: 24, detailWords: 6 },
    );
    expect(out.startsWith("Connect to a database.")).toBe(true);
    expect(out).not.toMatch(/list_connections|connectionInfo|config|json|example|https/);
  });

  it("draws on parameter descriptions when they agree", () => {
    // Never longer than the description itself, so the description must leave room.
    const out = extractSummary("Connect to a database. Never call it twice in a row without closing the previous one.", {
      wordBudget: 24,
      detailWords: 6,
      extraText: ["Name of the Atlas cluster", "Region of the Atlas cluster"],
    });
    // The warning's words are worth too little; the cluster is named twice below.
    expect(out).toBe("Connect to a database. Atlas cluster.");
  });

  it("lets the summarizer turn details off", () => {
    const t = tool("research", description);
    expect(new ExtractiveSummarizer({ detailWords: 0 }).summarizeTool(t).summary).toBe("Perform research on a topic.");
    expect(new ExtractiveSummarizer().summarizeTool(t).summary).toMatch(/multiple sources/);
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

  // Pinned on purpose: extractive@2 appends detail phrases to the lead sentence.
  it("keeps what the longest descriptions are about", () => {
    const expected: Array<[string, string, string]> = [
      ["desktop-commander", "start_search", "Start a streaming search that can return results progressively. Looking, find, name, code, content, authentication."],
      ["firecrawl", "firecrawl_scrape", "Scrape content from a single URL with advanced options. Page, extraction, multiple, markdown, extracting, branding."],
      ["desktop-commander", "read_file", "Read contents from files and URLs. Images, starting, positive, line, negative, 0-based."],
      ["desktop-commander", "start_process", "Start a terminal process on the authorized device with intelligent state detection. Running, read-write, files, paths, container, folder-name."],
      ["sequential-thinking", "sequentialthinking", "Dynamic and reflective problem-solving through thoughts. Question, steps, previous, hypothesis, process, current."],
      ["sentry", "update_issue", "Update a Sentry issue's status or assignment. Resolve, reopen, find, unresolved, forever, my-team-slug."],
      ["context7", "resolve-library-id", "Resolves a package/product name to a Context7-compatible library ID and returns matching libraries. Format, org, project, version, benchmark Score."],
      ["stripe", "create_customer", "Create a customer in Stripe."],
      ["stripe", "update_dispute", "Submit evidence to help resolve the dispute in your favor. Receive, contacting, customer, first step, ID."],
      ["notion", "API-get-user", "Retrieve a user."],
      ["filesystem", "list_allowed_directories", "Returns the list of directories that this server is allowed to access. Subdirectories, accessible, understand, nested paths, trying."],
    ];
    for (const [server, name, summary] of expected) {
      expect(summarizer.summarizeTool(corpusTool(corpus, server, name)).summary, `${server}:${name}`).toBe(summary);
    }
  });
});
