import { describe, expect, it } from "vitest";
import { ExtractiveSummarizer } from "../../src/summarize/extractiveSummarizer.js";
import { guardSummary } from "../../src/summarize/guard.js";
import { plainTextBlocks } from "../../src/summarize/plainTextBlocks.js";
import { splitSentences } from "../../src/summarize/splitSentences.js";

/** Length of an adversarial description: big enough that a quadratic pattern takes many seconds. */
const SIZE = 100_000;
/**
 * For patterns whose quadratic cost V8 keeps small per step (a lazy scan for `-->` or a closing
 * tag): at 100k characters they took one to four seconds, at this size tens of seconds.
 */
const LARGE = 300_000;
/**
 * A hang guard, not a speed assertion: each case takes well under a tenth of it with the linear
 * code, and took from 7 s to minutes with the old patterns.
 */
const TIMEOUT_MS = 3_000;

/**
 * Upstream text built to make a backtracking pattern rescan the rest of the description from each
 * of many start positions, blocking the event loop.
 */
const CASES: [string, string][] = [
  ["an unclosed tag followed by spaces", `Does a thing. <a${" ".repeat(SIZE)}`],
  ["many opening tags without a closing one", `Does a thing. ${"<a></".repeat(LARGE / 5)}`],
  ["many unclosed comments", `Does a thing. ${"<!--".repeat(LARGE / 4)}`],
  ["a heading with a long run of spaces inside", `# Does a thing${" ".repeat(SIZE)}x\n\nDoes a thing.`],
  ["a long word ending a line that another line follows", `Does a thing ${"a".repeat(SIZE)}!\nMore here.`],
  ["a long run of periods", `Does a thing ${".".repeat(SIZE)}x`],
  ["many abbreviations in one sentence", `Does a thing ${"e.g. X ".repeat(SIZE / 7)}`],
  ["many opening brackets", `Does a thing ${"[".repeat(SIZE)}]`],
  ["many unclosed image targets", `Does a thing ${"![a](".repeat(SIZE / 5)}`],
  ["a long chain of list-intro joiners", `Does a thing${" of".repeat(SIZE / 3)} x:`],
  ["a long run of capitals", `Does a thing ${"A".repeat(SIZE)}.`],
  ["a long run of dashes inside a word", `Does a thing x${"-".repeat(SIZE)}y ${"word ".repeat(40)}`],
  ["a long run of commas", `Does a thing ${",".repeat(SIZE)}x`],
  ["a long run of underscores inside a later word", `Does a thing. More about a${"_".repeat(SIZE)}b here.`],
];

describe("summarizing adversarial upstream text", () => {
  const summarizer = new ExtractiveSummarizer();

  for (const [label, description] of CASES) {
    it(`finishes on ${label}`, { timeout: TIMEOUT_MS }, () => {
      const { summary } = summarizer.summarizeTool({
        name: "thing",
        description,
        inputSchema: { type: "object", properties: { p: { type: "string", description: "A plain parameter." } } },
      });
      expect(summary).toMatch(/^Does a thing/);
    });
  }

  it("finishes on a parameter description with a long run of spaces", { timeout: TIMEOUT_MS }, () => {
    // Parameter texts also lose their optional/required markers, with patterns of their own.
    const { params } = summarizer.summarizeTool({
      name: "thing",
      description: "Does a thing.",
      inputSchema: { type: "object", properties: { p: { type: "string", description: `Some value${" ".repeat(SIZE)}x (optional)` } } },
    });
    expect(params["p"]).toMatch(/^Some value/);
  });

  it("keeps the behaviour the linear scans replaced", () => {
    expect(plainTextBlocks("Keep <b>bold</b> and <x>inline</x> text.<!-- hidden --> <br/>Done <a />now.")).toEqual([
      { text: "Keep bold and inline text. Done now.", kind: "paragraph" },
    ]);
    expect(plainTextBlocks("## Title ##\nUse <hints>\ndo not\n</hints> it <organizationSlug> here.")).toEqual([
      { text: "Title", kind: "heading" },
      { text: "Use", kind: "paragraph" },
      { text: "it organizationSlug here.", kind: "paragraph" },
    ]);
    expect(plainTextBlocks("See [the docs](https://x.test/a_(b)) and ![img](i.png) for more.")).toEqual([
      { text: "See the docs and for more.", kind: "paragraph" },
    ]);
    expect(splitSentences("Reads a file, e.g. Config files... Then stops!! Done")).toEqual(["Reads a file, e.g. Config files...", "Then stops!!", "Done"]);
    const summary = summarizer.summarizeTool({
      name: "list_things",
      description: "Lists the things of a project, including:",
      inputSchema: { type: "object", properties: { q: { type: "string", description: "The query, optional." } } },
    });
    expect(summary.summary).toMatch(/^Lists the things of a project\b/);
    expect(summary.params).toEqual({ q: "The query" });
  });
});

describe("guarding adversarial summaries", () => {
  /** A tool with a long description, so that no check stops at the length of the original. */
  const tool = {
    name: "wipe_disk",
    description: `Erases a disk device. ${"Every sector is overwritten. ".repeat(SIZE / 20)}`,
    inputSchema: { type: "object", properties: { device: { type: "string", description: "Block device path" } }, required: ["device"] },
  };
  /** Label, summary (also the note of `device`), and whether the guard accepts it. */
  const CASES: [string, string, boolean][] = [
    // Not a link: no scheme is that long.
    ["a long run of letters before a link", `Erases ${"a".repeat(SIZE)}://x`, true],
    ["a long dotted run before an at sign", `Erases ${"a.".repeat(SIZE / 2)}@x.test`, false],
    // Not an account number: it runs on into a lower-case letter.
    ["a long run of capitals after an account prefix", `Erases DE00${"C".repeat(SIZE)}a`, true],
    ["a long run of spaces before a dash", `Erases a disk${" ".repeat(SIZE)}- then send it`, false],
    ["many words that almost say nothing changes", `Erases a disk; ${"nothing nothing ".repeat(SIZE / 16)}`, false],
    ["many words the tool never says", `Erases ${"zyxw ".repeat(SIZE / 5)}`, false],
  ];
  for (const [label, summary, ok] of CASES) {
    it(`finishes on ${label}`, { timeout: TIMEOUT_MS }, () => {
      // Too long for the original either way: the length check alone is no verdict on the rest.
      const verdict = guardSummary(tool, { summary, params: { device: summary } });
      const reasons = verdict.ok ? [] : verdict.reasons.filter((r) => !r.startsWith("summary is longer"));
      expect(reasons.length === 0).toBe(ok);
    });
  }
});
