/**
 * The corpus servers that the unit tests over "every corpus tool" read: the first 24 recorded
 * (2026-11-21), which those tests' expectations were written against (counts, first names of a
 * sorted list, the one server whose schemas the validator skips, token shares). The corpus has
 * grown since (bench/corpus/README.md); the benchmarks, the hash test and the recorded-catalog
 * test read all of it.
 */
export const UNIT_TEST_SERVERS: ReadonlySet<string> = new Set([
  "brave-search",
  "chrome-devtools",
  "context7",
  "desktop-commander",
  "everything",
  "exa",
  "filesystem",
  "firecrawl",
  "github",
  "gitlab",
  "google-maps",
  "kubernetes",
  "memory",
  "mongodb",
  "notion",
  "playwright",
  "puppeteer",
  "redis",
  "sentry",
  "sequential-thinking",
  "slack",
  "stripe",
  "supabase",
  "tavily",
]);
