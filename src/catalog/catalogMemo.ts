import type { ListedTool } from "../model/types.js";
import type { GuardResult } from "../summarize/guard.js";
import type { ToolSummary } from "../summarize/types.js";
import type { AdmittedTool } from "../upstream/admitTool.js";

/**
 * A map that keeps at most `limit` entries, in two generations: new entries go to the current one;
 * when it is half full it becomes the previous one and the one before is dropped, and a hit in the
 * previous generation moves to the current one. So what was used since the last turn survives and
 * what was not is dropped, and a hit costs one lookup (a least-recently-used list would move an
 * entry on every hit, which cost as much as the work saved on a 1,000-tool relist).
 */
export class BoundedMemo<V> {
  private current = new Map<string, V>();
  private previous = new Map<string, V>();
  private readonly generation: number;

  constructor(readonly limit: number) {
    if (!Number.isInteger(limit) || limit < 2) throw new RangeError(`BoundedMemo: limit must be an integer >= 2, got ${limit}`);
    this.generation = Math.floor(limit / 2);
  }

  /** The value under `key`, kept for another generation; undefined when absent. */
  get(key: string): V | undefined {
    const value = this.current.get(key);
    if (value !== undefined) return value;
    const old = this.previous.get(key);
    if (old !== undefined) {
      this.previous.delete(key);
      this.put(key, old);
    }
    return old;
  }

  /** Stores `value` under `key`; the oldest generation goes when the current one is full. */
  set(key: string, value: V): void {
    this.previous.delete(key);
    this.put(key, value);
  }

  /** Entries held now (never more than {@link limit}). */
  get size(): number {
    return this.current.size + this.previous.size;
  }

  private put(key: string, value: V): void {
    if (!this.current.has(key) && this.current.size >= this.generation) {
      this.previous = this.current;
      this.current = new Map();
    }
    this.current.set(key, value);
  }
}

/** How many forms and verdicts one tool keeps (names, summaries and modes it was met with). */
const PER_TOOL = 16;

/**
 * Everything derived from one tool's content, the same for every tool object with that content:
 * its schema hash, the forms rendered from it and the guard's verdicts on its summaries. The one
 * home of that state: catalog tools point at their record, and the {@link CatalogMemo} a pipeline
 * hands its catalogs finds the record again for every catalog that meets the same content.
 */
export class ToolRecord {
  private readonly views = new Map<string, ListedTool>();
  private readonly verdicts = new Map<string, GuardResult>();
  /**
   * The same verdicts by summary object: the store keeps one object per cache line, so a relist
   * meets the same objects and finds its verdict without writing the summary's identity.
   */
  private readonly verdictOf = new WeakMap<ToolSummary, GuardResult>();
  /**
   * Parameter texts by params object: the store keeps one object per cache line, so a relist meets
   * the same objects and writes each one once. Keyed by identity but holding the object's own
   * content, so an object read anew gives the same text.
   */
  private readonly paramsText = new WeakMap<object, string>();

  /**
   * @param fingerprint content identity of the tool (see {@link CatalogMemo}); "" for a tool without a JSON form, whose record is not kept
   * @param tool the admitted tool (depth checked, null means absent)
   * @param hash its schema hash
   */
  constructor(
    readonly fingerprint: string,
    readonly tool: AdmittedTool,
    readonly hash: string,
  ) {}

  /**
   * The form `view` of the tool under `name` with `summary`, made by `render` the first time:
   * the key holds everything a per-tool form is made of besides the content, so a hit is the form
   * `render` would make.
   */
  view(view: string, name: string, summary: ToolSummary | undefined, render: () => ListedTool): ListedTool {
    const key = `${view}\u0000${name}\u0000${this.summaryIdentity(summary)}`;
    let form = this.views.get(key);
    if (form === undefined) {
      form = render();
      if (this.views.size >= PER_TOOL) this.views.clear();
      this.views.set(key, form);
    }
    return form;
  }

  /**
   * The guard's verdict on `summary` for this tool, made by `judge` the first time: looked up by
   * the object first (a cache entry read once and met on every relist), then by content (the same
   * summary read again, or met by another catalog).
   */
  verdict(summary: ToolSummary, judge: () => GuardResult): GuardResult {
    let verdict = this.verdictOf.get(summary);
    if (verdict !== undefined) return verdict;
    const key = this.summaryIdentity(summary);
    verdict = this.verdicts.get(key);
    if (verdict === undefined) {
      verdict = judge();
      if (this.verdicts.size >= PER_TOOL) this.verdicts.clear();
      this.verdicts.set(key, verdict);
    }
    this.verdictOf.set(summary, verdict);
    return verdict;
  }

  /** A string equal for two summaries exactly when their text and parameter texts are equal. */
  private summaryIdentity(summary: ToolSummary | undefined): string {
    if (summary === undefined) return "-";
    let params = this.paramsText.get(summary.params);
    if (params === undefined) {
      params = JSON.stringify(summary.params);
      this.paramsText.set(summary.params, params);
    }
    // The text's length first: no text can run into the parameters and pass for another split.
    return `${summary.summary.length}:${summary.summary}${params}`;
  }
}

/** Limits of a {@link CatalogMemo}. */
export interface CatalogMemoLimits {
  /** Tool contents whose record is kept (default 16,384). */
  tools?: number;
}

/**
 * The records of the tools a pipeline's catalogs met, kept across catalogs and relists, keyed by
 * content: a relist or a new catalog of the same pipeline hands in new objects with the same
 * content, and their schema hash, the guard's verdicts on their cached summaries and their
 * rendered forms are then lookups instead of canonical JSON and token counts. Owned by whoever
 * makes the catalogs (the summary pipeline makes one per bridge and hands it to its catalog), not
 * by the process: two bridges in one process keep their own. The key of a tool is the xxhash64
 * and length of its `JSON.stringify` text, which covers every member the views read (`_meta` and
 * `execution` included, which the schema hash leaves out); a rendered form is keyed within that by
 * the exposed name, the summary and the mode, so a changed schema under the same name, a new
 * summary or another mode is a miss, never a stale hit. Bounded: records not met for two
 * generations are dropped, so a long-running bridge whose upstreams keep changing does not grow
 * without limit.
 */
export class CatalogMemo {
  readonly tools: BoundedMemo<ToolRecord>;

  constructor(limits: CatalogMemoLimits = {}) {
    this.tools = new BoundedMemo(limits.tools ?? 16_384);
  }
}
