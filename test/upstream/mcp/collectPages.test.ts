import { describe, expect, it } from "vitest";
import { collectPages, MAX_LIST_PAGES } from "../../../src/upstream/mcp/collectPages.js";
import { memoryLogger } from "../harness.js";

describe("collectPages", () => {
  it("follows cursors to the end", async () => {
    const pages: Record<string, { items: unknown[]; nextCursor?: string }> = {
      start: { items: [1, 2], nextCursor: "b" },
      b: { items: [3], nextCursor: "c" },
      c: { items: [4] },
    };
    const { logger } = memoryLogger();
    expect(await collectPages(async (cursor) => pages[cursor ?? "start"]!, logger, "test")).toEqual([1, 2, 3, 4]);
  });

  it("stops with an error logged when a cursor repeats", async () => {
    const { logger, lines } = memoryLogger();
    let calls = 0;
    const items = await collectPages(
      async () => {
        calls++;
        return { items: [calls], nextCursor: calls === 1 ? "x" : "y" };
      },
      logger,
      "loop",
    );
    expect(items).toEqual([1, 2, 3]);
    expect(lines.some((l) => l.startsWith("abridge error") && l.includes("repeats a cursor"))).toBe(true);
  });

  it("stops after the page limit with an error logged", async () => {
    const { logger, lines } = memoryLogger();
    let page = 0;
    const items = await collectPages(async () => ({ items: [page], nextCursor: `c${++page}` }), logger, "endless");
    expect(items).toHaveLength(MAX_LIST_PAGES);
    expect(lines.some((l) => l.startsWith("abridge error") && l.includes("page limit"))).toBe(true);
  });
});
