/**
 * The catalog's pure renderings a front end shows besides the lists the Bridge serves: token
 * counts of a tool set per mode (`stats`, the CLI's token tables) and a tool's one-line compact
 * description (the daemon's `list_tools` in lazy mode), and the types of what the Bridge hands out.
 * Offered by the core, so that front ends need nothing below it.
 */
export { compactDescription, tokenReport } from "../catalog/renderTools.js";
export type { CatalogTool, ListedTool, Mode } from "../catalog/types.js";
export type { DiscoveryCounts, DiscoverOptions } from "../catalog/toolCatalog.js";
export type { SchemaResult } from "../catalog/metaTools.js";
export type { CacheEntry } from "../cache/cacheEntry.js";
