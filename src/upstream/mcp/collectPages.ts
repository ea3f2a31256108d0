import type { Logger } from "../../log/logger.js";

/** Most pages one list may span; more means a broken server, not a big one. */
export const MAX_LIST_PAGES = 1_000;

/** One page of a paginated MCP list (`tools/list`, `resources/list`, ...). */
export interface ListPage {
  items: unknown[];
  nextCursor?: string | undefined;
}

/**
 * Follows `nextCursor` to the end and returns every item in order. A server that hands out the
 * same cursor twice, or more than {@link MAX_LIST_PAGES} pages, would keep us looping forever:
 * listing stops there, the error is logged, and the items gathered so far are returned (a partial
 * list beats no list). An empty-string cursor is treated as the end, as several servers send
 * `""` to mean "no more".
 */
export async function collectPages(
  fetchPage: (cursor: string | undefined) => Promise<ListPage>,
  logger: Logger,
  what: string,
  signal?: AbortSignal,
): Promise<unknown[]> {
  const items: unknown[] = [];
  const seen = new Set<string>();
  let cursor: string | undefined;
  for (let page = 0; ; page++) {
    signal?.throwIfAborted();
    if (page >= MAX_LIST_PAGES) {
      logger.error("list exceeds the page limit; stopped", { list: what, pages: page, items: items.length });
      return items;
    }
    const result = await fetchPage(cursor);
    items.push(...result.items);
    const next = result.nextCursor;
    if (next === undefined || next === "") return items;
    if (seen.has(next)) {
      logger.error("list repeats a cursor; stopped", { list: what, cursor: next, pages: page + 1, items: items.length });
      return items;
    }
    seen.add(next);
    cursor = next;
  }
}
