import { createHash } from "node:crypto";
import type { CacheEntry } from "../cache/cacheEntry.js";
import { cacheKey } from "../cache/cacheEntry.js";
import type { SummaryStore } from "../cache/summaryStore.js";
import { silentLogger, type Logger } from "../log/logger.js";
import { guardSummary } from "../summarize/guard.js";
import type { SummarizeInput } from "../summarize/types.js";
import type { AdmittedTool } from "../upstream/admitTool.js";
import { ArgumentValidator, type ValidationResult } from "./argumentValidator.js";
import { renderTools, sortTools, type CompactSchema, type RenderOptions } from "./renderTools.js";
import { SearchIndex, type SearchResult } from "./searchIndex.js";
import type { ToolHasher } from "./toolHash.js";
import { CatalogMemo, ToolRecord } from "./catalogMemo.js";
import type { AdmittedExposedTool, CatalogTool, ListedTool, Mode } from "./types.js";

/** Where summarize jobs go; the {@link SummarizeQueue} in production. */
export interface SummaryJobSink {
  enqueue(input: SummarizeInput, options?: { force?: boolean }): void;
  /** True while summaries are still to come; the change they make is announced once, after. */
  busy?(): boolean;
}

/** Counts of one server's discovery pass. */
export interface DiscoveryCounts {
  server: string;
  tools: number;
  /** Tools whose summary came from the cache. */
  hits: number;
  /** Tools without a usable summary: a job was queued. */
  queued: number;
}

/** Options of {@link ToolCatalog}. */
export interface ToolCatalogOptions {
  /** Where summaries are looked up (only `get` is used). */
  store: Pick<SummaryStore, "get">;
  hasher: ToolHasher;
  /** Receives a job for every miss; without one, misses are served with their original text only. */
  jobs?: SummaryJobSink;
  separator?: string;
  logger?: Logger;
  /** Quiet time before listeners hear of a change, so a burst of new summaries is one event. */
  changeDebounceMs?: number;
  /** Input schema compact lists (config `compact_schema`). */
  compactSchema?: CompactSchema;
  /**
   * Ids of the summarizers in use (`extractive@3`, `openai:gpt-4o-mini`). An entry written by
   * another version of one of them (`extractive@2`) is served while it is summarized again: a
   * version is bumped when its summaries change, and they should not wait for `warm --stale`.
   */
  summarizerIds?: readonly string[];
  /** `mode = "auto"`: token budget and pins (config `token_budget`, `pin`); counts come via {@link ToolCatalog.setCallCounts}. */
  auto?: { tokenBudget?: number; pins?: readonly string[] };
  /**
   * Where per-tool work is kept across catalogs: the one their maker (the summary pipeline) owns,
   * so a catalog made again over the same tools walks no schema. Default: one of this catalog's own.
   */
  memo?: CatalogMemo;
}

/** How {@link ToolCatalog.setTools} treats tools that already have a summary. */
export interface DiscoverOptions {
  /** Queue every tool again, hit or not. */
  force?: boolean;
  /** Queue hits made by another summarizer or prompt than `current`. */
  stale?: { summarizer: string; prompt: string };
  /** false: queue nothing, only look (default true). */
  queue?: boolean;
}

/**
 * The discovered tools with their cache keys and summaries, and every view of them. Discovery never
 * waits on a summary: a miss is served with the original text at once and a job is queued; when
 * the summary lands, listeners hear one debounced change.
 */
export class ToolCatalog {
  private readonly store: Pick<SummaryStore, "get">;
  private readonly hasher: ToolHasher;
  private readonly memo: CatalogMemo;
  private readonly jobs: SummaryJobSink | undefined;
  private readonly separator: string;
  private readonly logger: Logger;
  private readonly changeDebounceMs: number;
  private byName = new Map<string, CatalogTool>();
  private byKey = new Map<string, CatalogTool>();
  private sorted: CatalogTool[] = [];
  private readonly rendered = new Map<Mode, ListedTool[]>();
  private readonly digests = new Map<Mode, string>();
  private searchIndex: SearchIndex | undefined;
  private readonly validator = new ArgumentValidator();
  /** Keys of tools whose "forwarded unvalidated" warning was logged already. */
  private readonly warnedUnvalidated = new Set<string>();
  private readonly listeners = new Set<() => void>();
  private changeTimer: NodeJS.Timeout | undefined;
  /** Whether a pending change touched the tools themselves, not only their summaries. */
  private structuralChange = false;
  private counters = { hits: 0, misses: 0, rejected: 0 };
  private readonly compactSchema: CompactSchema | undefined;
  private readonly summarizerIds: readonly string[];
  private readonly auto: { tokenBudget?: number; pins?: readonly string[] };
  private callCounts: ReadonlyMap<string, number> = new Map();
  /** Entries whose rejection was counted and logged (once each; the verdict itself is in the tool's record). */
  private readonly reported = new WeakSet<CacheEntry>();
  /** Keys whose rejected entry was already sent back to the summarizer (once: no loop). */
  private readonly resummarized = new Set<string>();

  constructor(options: ToolCatalogOptions) {
    this.store = options.store;
    this.hasher = options.hasher;
    this.memo = options.memo ?? new CatalogMemo();
    this.jobs = options.jobs;
    this.separator = options.separator ?? "_";
    this.logger = options.logger ?? silentLogger;
    this.changeDebounceMs = options.changeDebounceMs ?? 250;
    this.compactSchema = options.compactSchema;
    this.summarizerIds = options.summarizerIds ?? [];
    this.auto = options.auto ?? {};
  }

  /**
   * Replaces the catalog with `tools` (the pool's exposed tools, admitted where they entered; see
   * admitTool): hashes each, looks its key up in the store, and queues a summarize job for every
   * miss. Returns per-server counts.
   */
  setTools(tools: readonly AdmittedExposedTool[], options: DiscoverOptions = {}): DiscoveryCounts[] {
    const counts = new Map<string, DiscoveryCounts>();
    const byName = new Map<string, CatalogTool>();
    const byKey = new Map<string, CatalogTool>();
    for (const given of tools) {
      const derived = this.derive(given.tool);
      const exposed = { ...given, tool: derived.tool };
      const hash = derived.hash;
      const key = cacheKey(exposed.server, exposed.tool.name, hash);
      const cached = this.store.get(key);
      const entry = cached !== undefined && this.trusted(cached, exposed.tool, derived) ? cached : undefined;
      const rejected = cached !== undefined && entry === undefined;
      const count = counts.get(exposed.server) ?? { server: exposed.server, tools: 0, hits: 0, queued: 0 };
      counts.set(exposed.server, count);
      count.tools += 1;
      const catalogTool: CatalogTool = {
        name: exposed.name,
        server: exposed.server,
        uri: exposed.uri,
        key,
        tool: exposed.tool,
        record: derived,
        ...(entry ? { summary: { summary: entry.summary, params: entry.params } } : {}),
        ...(entry?.formTokens ? { formTokens: entry.formTokens } : {}),
      };
      byName.set(catalogTool.name, catalogTool);
      byKey.set(key, catalogTool);
      const stale =
        entry !== undefined &&
        ((options.stale !== undefined && (entry.summarizer !== options.stale.summarizer || entry.prompt !== options.stale.prompt)) ||
          isOlderVersion(entry.summarizer, this.summarizerIds));
      if (entry) {
        count.hits += 1;
        this.counters.hits += 1;
      } else {
        this.counters.misses += 1;
      }
      // A rejected line is summarized again once, with force: the cache holds the key already.
      const redo = rejected && !this.resummarized.has(key);
      if (redo) this.resummarized.add(key);
      if (((!entry && !rejected) || redo || stale || options.force) && this.jobs && options.queue !== false) {
        this.jobs.enqueue({ key, server: exposed.server, tool: exposed.tool, name: exposed.name }, { force: Boolean(options.force || stale || redo) });
        count.queued += 1;
      }
    }
    const changed = !sameTools(this.byKey, byKey) || !sameNames(this.byName, byName);
    this.byName = byName;
    this.byKey = byKey;
    this.sorted = sortTools([...byName.values()]);
    this.invalidate();
    if (changed) this.scheduleChange();
    return [...counts.values()].sort((a, b) => (a.server < b.server ? -1 : a.server > b.server ? 1 : 0));
  }

  /**
   * The record of `tool` (its schema hash, forms and verdicts), looked up by content in the memo:
   * a relist hands in new objects for the same tools, and a new catalog over tools seen before (a
   * restart of discovery, a reload) then hashes no schema. A tool `JSON.stringify` cannot write
   * (a bigint from a library caller) has no content key and gets a record of its own, not kept.
   */
  private derive(tool: AdmittedTool): ToolRecord {
    let text: string | undefined;
    try {
      text = JSON.stringify(tool);
    } catch {
      text = undefined;
    }
    const fingerprint = text === undefined ? "" : `${this.hasher.hashText(text)}:${text.length}`;
    if (fingerprint !== "") {
      const known = this.memo.tools.get(fingerprint);
      if (known !== undefined) return known;
    }
    const derived = new ToolRecord(fingerprint, tool, this.hasher.hash(tool));
    if (fingerprint !== "") this.memo.tools.set(fingerprint, derived);
    return derived;
  }

  /**
   * Takes a newly stored summary into the catalog. Returns true when it belongs to a tool being
   * served (a summary for a tool that changed meanwhile is kept in the cache but not shown).
   */
  applyEntry(entry: CacheEntry): boolean {
    const tool = this.byKey.get(entry.key);
    if (tool?.record === undefined) return false;
    if (!this.trusted(entry, tool.tool, tool.record)) return false;
    tool.summary = { summary: entry.summary, params: entry.params };
    if (entry.formTokens !== undefined) tool.formTokens = entry.formTokens;
    else delete tool.formTokens;
    this.invalidate();
    this.scheduleChange({ summaryOnly: true });
    return true;
  }

  /**
   * Whether a cached summary may stand in for `tool`'s description: the guard that checks a
   * summarizer's text before it is written also checks what is read back, since the cache file is
   * plain text anyone with write access can edit, and a shared one is written by other hosts (a
   * summary longer than the original, one that gives the model instructions or one that calls a
   * deleting tool a lookup would be served as if abridge had written it).
   */
  private trusted(entry: CacheEntry, tool: CatalogTool["tool"], record: ToolRecord): boolean {
    // Kept with the tool's record, by the entry (one object per cache line): a new catalog over
    // the same store meets every entry for the first time, and the guard was two fifths of a warm
    // discovery.
    const verdict = record.verdict(entry, () => guardSummary(tool, { summary: entry.summary, params: entry.params }));
    if (!verdict.ok && !this.reported.has(entry)) {
      this.reported.add(entry);
      this.counters.rejected += 1;
      this.logger.warn("cached summary rejected by the guard; serving the original description", {
        key: entry.key,
        reasons: verdict.reasons,
      });
    }
    return verdict.ok;
  }

  /** Every tool, sorted by server then tool. */
  tools(): readonly CatalogTool[] {
    return this.sorted;
  }

  /** The tool exposed under `name`. */
  get(name: string): CatalogTool | undefined {
    return this.byName.get(name);
  }

  /** The tool `tool` of `server`. */
  find(server: string, tool: string): CatalogTool | undefined {
    return this.sorted.find((t) => t.server === server && t.tool.name === tool);
  }

  /** Every exposed name (for "did you mean" hints). */
  names(): string[] {
    return [...this.byName.keys()];
  }

  /** The tool list in `mode`, rendered once per change. */
  list(mode: Mode): ListedTool[] {
    let listed = this.rendered.get(mode);
    if (!listed) {
      listed = renderTools(this.sorted, mode, this.renderOptions());
      this.rendered.set(mode, listed);
    }
    return listed;
  }

  /** What {@link list} renders with: separator, compact schema, and auto's budget, pins and counts. */
  renderOptions(): RenderOptions {
    return {
      separator: this.separator,
      ...(this.compactSchema !== undefined ? { compactSchema: this.compactSchema } : {}),
      auto: { ...this.auto, callCounts: this.callCounts },
    };
  }

  /**
   * Takes new call counts for `mode = "auto"`. The auto list is rendered again; listeners hear of
   * a change only when its bytes differ. The caller decides how often (config
   * `auto_update_minutes`): between two calls the list stays byte-stable, whatever is called.
   * Returns true when the auto list changed.
   */
  setCallCounts(counts: ReadonlyMap<string, number>): boolean {
    const before = this.rendered.get("auto");
    this.callCounts = new Map(counts);
    this.rendered.delete("auto");
    this.digests.delete("auto");
    if (before === undefined) return false;
    const changed = JSON.stringify(before) !== JSON.stringify(this.list("auto"));
    if (changed) this.scheduleChange();
    return changed;
  }

  /**
   * A digest of {@link list}(mode), computed once per change: front ends compare it to tell a real
   * change from a summary that alters nothing they show. Every session shares it instead of keeping
   * its own serialized copy of the list (which cost each HTTP session the size of the list).
   */
  listDigest(mode: Mode): string {
    let digest = this.digests.get(mode);
    if (digest === undefined) {
      digest = createHash("sha256")
        .update(JSON.stringify(this.list(mode)))
        .digest("base64url");
      this.digests.set(mode, digest);
    }
    return digest;
  }

  /** BM25 search over everything each tool says, names first (what `search_tools` answers). */
  search(query: string, limit?: number): SearchResult[] {
    this.searchIndex ??= new SearchIndex(this.sorted, { mode: "lazy" });
    return this.searchIndex.search(query, limit);
  }

  /** Validates call arguments against the tool's full original schema. */
  validate(tool: CatalogTool, args: unknown): ValidationResult {
    const result = this.validator.validate(tool, args);
    // Once per cache key: every call of such a tool skips validation, and a warning per call would
    // flood the log; a changed schema is a new key and is worth one warning of its own.
    if (result.ok && result.skipped !== undefined && !this.warnedUnvalidated.has(tool.key)) {
      this.warnedUnvalidated.add(tool.key);
      this.logger.warn("input schema does not compile; calls are forwarded unvalidated", {
        server: tool.server,
        tool: tool.tool.name,
        reason: result.skipped,
      });
    }
    if (result.ok && result.unchecked !== undefined && !this.warnedUnvalidated.has(tool.key)) {
      this.warnedUnvalidated.add(tool.key);
      this.logger.warn("input schema has patterns a linear-time engine cannot run (lookaround, backreferences); those are left to the server", {
        server: tool.server,
        tool: tool.tool.name,
        patterns: result.unchecked,
      });
    }
    return result;
  }

  /**
   * Cache hits and misses since start, and `rejected`: entries read from the store or heard from
   * other processes that the guard refused (each entry counted once), served as the original until
   * summarized again.
   */
  stats(): { tools: number; summarized: number; hits: number; misses: number; rejected: number } {
    return {
      tools: this.sorted.length,
      summarized: this.sorted.filter((t) => t.summary !== undefined).length,
      ...this.counters,
    };
  }

  /** Calls `listener` (debounced) whenever what a client sees may have changed. */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Stops pending change notifications. */
  close(): void {
    if (this.changeTimer) clearTimeout(this.changeTimer);
    this.changeTimer = undefined;
    this.listeners.clear();
  }

  private invalidate(): void {
    this.rendered.clear();
    this.digests.clear();
    this.searchIndex = undefined;
  }

  /**
   * Tells listeners, debounced, that the list changed. A change made only by summaries landing is
   * held while the summarizer is still busy: a background pass over 100k tools otherwise paused
   * longer than the debounce now and then and sent 101 list_changed, each making clients re-page
   * the whole list; it now sends one when the pass is done. A change of the tools themselves
   * (added, removed, renamed) is announced after the debounce as before, summaries included.
   */
  private scheduleChange(options: { summaryOnly?: boolean } = {}): void {
    if (this.listeners.size === 0) return;
    if (!options.summaryOnly) this.structuralChange = true;
    if (this.changeTimer) clearTimeout(this.changeTimer);
    this.changeTimer = setTimeout(() => {
      this.changeTimer = undefined;
      if (!this.structuralChange && this.jobs?.busy?.() === true) {
        // Summaries still landing: look again after another quiet period.
        this.scheduleChange({ summaryOnly: true });
        return;
      }
      this.structuralChange = false;
      for (const listener of this.listeners) listener();
    }, this.changeDebounceMs);
    this.changeTimer.unref();
  }
}

/**
 * True when `id` (`extractive@2`) names a version of one of `current` (`extractive@3`) other than
 * the one in use. Ids without a version (`openai:gpt-4o-mini`) never match: a model name is not a
 * version of the summarizer's output.
 */
function isOlderVersion(id: string, current: readonly string[]): boolean {
  const at = id.lastIndexOf("@");
  if (at <= 0) return false;
  const family = id.slice(0, at + 1);
  return current.some((c) => c !== id && c.startsWith(family) && c.lastIndexOf("@") === at);
}

function sameTools(a: Map<string, CatalogTool>, b: Map<string, CatalogTool>): boolean {
  if (a.size !== b.size) return false;
  for (const key of a.keys()) if (!b.has(key)) return false;
  return true;
}

function sameNames(a: Map<string, CatalogTool>, b: Map<string, CatalogTool>): boolean {
  if (a.size !== b.size) return false;
  for (const [name, tool] of a) if (b.get(name)?.key !== tool.key) return false;
  return true;
}
