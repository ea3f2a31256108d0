/**
 * The loader's hand-written check (`fastCheckCacheEntry`) against zod (`cacheEntrySchema`), which
 * stays the definition of a cache line: on many valid, nearly valid and mutated lines, whatever the
 * fast check accepts zod accepts with the same value, every ordinary valid entry is accepted by the
 * fast check (so the fast path is really taken), and `parseCacheLine` decides exactly as
 * "JSON.parse, zod, key check" did before the fast path existed.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { cacheEntrySchema, cacheKey, fastCheckCacheEntry } from "../../src/cache/cacheEntry.js";
import type { CacheEntry } from "../../src/cache/cacheEntry.js";
import { parseCacheLine } from "../../src/cache/parseCacheLine.js";
import { lineOf, makeEntry } from "../helpers/cacheEntries.js";
import { assertAgreesOn, checkAgreement, type CheckPair } from "../helpers/checkAgreement.js";

const SEED = 20261122;
const RUNS = 2000;

/** What `parseCacheLine` did before the fast path: JSON.parse, zod, then the key check. */
function reference(line: string): { ok: true; entry: CacheEntry } | { ok: false } {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return { ok: false };
  }
  const parsed = cacheEntrySchema.safeParse(value);
  if (!parsed.success) return { ok: false };
  const entry = parsed.data;
  return entry.key === cacheKey(entry.server, entry.tool, entry.hash) ? { ok: true, entry } : { ok: false };
}

const FIELDS = new Set([
  "key",
  "server",
  "tool",
  "hash",
  "summary",
  "params",
  "summarizer",
  "prompt",
  "tokensBefore",
  "tokensAfter",
  "createdAt",
  "fallback",
  "formTokens",
]);
const FORM_TOKEN_FIELDS = new Set(["renderer", "full", "summary", "names", "types", "none"]);

/**
 * A value zod accepts that the fast check may leave to zod: unknown keys to strip, a `__proto__`
 * parameter to drop, a key under 10 UTF-16 units (zod then counts code points; a key that matches
 * its server, tool and hash has at least 20).
 */
function isUnusual(value: unknown): boolean {
  if (typeof value !== "object" || value === null) return false;
  const record = value as Record<string, unknown>;
  if (Object.keys(record).some((name) => !FIELDS.has(name))) return true;
  if (typeof record.key === "string" && record.key.length < 10) return true;
  const formTokens = record.formTokens;
  if (typeof formTokens === "object" && formTokens !== null && Object.keys(formTokens).some((name) => !FORM_TOKEN_FIELDS.has(name))) return true;
  const params = record.params;
  return typeof params === "object" && params !== null && Object.hasOwn(params, "__proto__");
}

/** The pair under test: the fast check hands on the parsed value itself, so it must equal zod's output. */
const cachePair: CheckPair = {
  name: "cache entry",
  schema: cacheEntrySchema,
  fast: (value) => fastCheckCacheEntry(value) !== undefined,
  defers: isUnusual,
  sameOutput: true,
};

interface Tally {
  lines: number;
  fastAccepted: number;
  valid: number;
}

/** Checks one line; counts what happened so a run can show that each branch was exercised. */
function checkLine(line: string, tally: Tally): void {
  tally.lines += 1;
  const expected = reference(line);
  const got = parseCacheLine(line);
  expect(got.ok, line).toBe(expected.ok);
  if (got.ok && expected.ok) {
    tally.valid += 1;
    expect(got.entry, line).toStrictEqual(expected.entry);
  }
  if (!got.ok) expect(got.reason.length).toBeGreaterThan(0);

  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return;
  }
  if (assertAgreesOn(cachePair, value).fast) tally.fastAccepted += 1;
}

const MISSING = Symbol("missing");

/** Mostly `good`, sometimes a value of another JSON type, sometimes absent. */
function field(good: fc.Arbitrary<unknown>): fc.Arbitrary<unknown> {
  const other = fc.oneof(
    fc.constant(null),
    fc.boolean(),
    fc.integer(),
    fc.double(),
    fc.string({ maxLength: 4 }),
    fc.array(fc.string({ maxLength: 3 }), { maxLength: 2 }),
    fc.dictionary(fc.string({ maxLength: 3 }), fc.string({ maxLength: 3 }), { maxKeys: 2 }),
  );
  return fc.oneof({ weight: 60, arbitrary: good }, { weight: 1, arbitrary: other }, { weight: 1, arbitrary: fc.constant(MISSING) });
}

const text = (maxLength: number): fc.Arbitrary<string> =>
  fc.oneof(fc.string({ maxLength }), fc.string({ maxLength, unit: "grapheme" }), fc.string({ maxLength: 6, unit: "binary" }), fc.constant(""));
const name = fc.oneof(fc.constantFrom("github", "slack", "a", "srv:x", "x:y:z"), text(10));
const hash = fc.oneof(
  { weight: 16, arbitrary: fc.stringMatching(/^[0-9a-f]{16}$/) },
  { weight: 1, arbitrary: fc.stringMatching(/^[0-9a-fA-F]{15,17}$/) },
  { weight: 1, arbitrary: text(18) },
);
const count = fc.oneof(
  { weight: 16, arbitrary: fc.nat() },
  { weight: 1, arbitrary: fc.constantFrom(-0, -1, 0.5, 2 ** 53 - 1, 2 ** 53, 1e21, Number.MAX_SAFE_INTEGER + 2) },
  { weight: 1, arbitrary: fc.integer({ min: -1000, max: 1000 }) },
);
const params = fc.oneof(
  { weight: 6, arbitrary: fc.dictionary(name, text(30), { maxKeys: 4 }) },
  {
    weight: 1,
    arbitrary: fc
      .array(fc.tuple(fc.constantFrom("__proto__", "constructor", "0", "a", "toString"), fc.oneof(text(5), fc.integer(), fc.constant(null))), { maxLength: 3 })
      .map((pairs) => ({ pairs })),
  },
);

/** Serializes name/value pairs by hand so that duplicate names and `__proto__` reach the line. */
function objectText(pairs: readonly (readonly [string, unknown])[]): string {
  const body = pairs.map(([key, value]) => {
    const json =
      typeof value === "object" && value !== null && "pairs" in value ? objectText((value as { pairs: [string, unknown][] }).pairs) : JSON.stringify(value);
    return `${JSON.stringify(key)}:${json}`;
  });
  return `{${body.join(",")}}`;
}

/** A line that is often a valid entry and, when it is not, fails in one or two ways. */
const entryLine = fc
  .record({
    server: field(name),
    tool: field(name),
    hash: field(hash),
    keyKind: fc.oneof({ weight: 14, arbitrary: fc.constant("consistent") }, fc.constant("other"), fc.constant("missing")),
    otherKey: text(24),
    summary: field(text(60)),
    params: fc.oneof({ weight: 3, arbitrary: field(params) }, { weight: 1, arbitrary: fc.constant(MISSING) }),
    summarizer: field(fc.oneof(fc.constantFrom("extractive@1", "openai:gpt-4o-mini"), text(8))),
    prompt: field(fc.oneof(fc.constant("none"), text(8))),
    tokensBefore: field(count),
    tokensAfter: field(count),
    createdAt: field(fc.oneof(fc.constant("2026-11-21T10:00:00Z"), text(8))),
    fallback: fc.oneof({ weight: 3, arbitrary: fc.constant(MISSING) }, { weight: 1, arbitrary: field(text(10)) }),
    formTokens: fc.oneof(
      { weight: 2, arbitrary: fc.constant(MISSING) },
      {
        weight: 2,
        arbitrary: field(
          fc
            .record({
              renderer: field(fc.oneof(fc.integer({ min: 1, max: 3 }), count)),
              full: field(count),
              summary: field(count),
              names: field(count),
              types: field(count),
              none: field(count),
            })
            .map((r) => Object.fromEntries(Object.entries(r).filter(([, v]) => v !== MISSING))),
        ),
      },
    ),
    extra: fc.oneof(
      { weight: 6, arbitrary: fc.constant([] as [string, unknown][]) },
      {
        weight: 1,
        arbitrary: fc.array(fc.tuple(fc.constantFrom("extra", "Key", "__proto__", "key", "params"), fc.oneof(text(5), fc.integer())), { maxLength: 2 }),
      },
    ),
    shuffle: fc.boolean(),
  })
  .map((r) => {
    const consistent = typeof r.server === "string" && typeof r.tool === "string" && typeof r.hash === "string";
    const key =
      r.keyKind === "missing"
        ? MISSING
        : r.keyKind === "consistent" && consistent
          ? cacheKey(r.server as string, r.tool as string, r.hash as string)
          : r.otherKey;
    const pairs: [string, unknown][] = [];
    const put = (fieldName: string, value: unknown): void => {
      if (value !== MISSING) pairs.push([fieldName, value]);
    };
    put("key", key);
    put("server", r.server);
    put("tool", r.tool);
    put("hash", r.hash);
    put("summary", r.summary);
    put("params", r.params);
    put("summarizer", r.summarizer);
    put("prompt", r.prompt);
    put("tokensBefore", r.tokensBefore);
    put("tokensAfter", r.tokensAfter);
    put("createdAt", r.createdAt);
    put("fallback", r.fallback);
    put("formTokens", r.formTokens);
    pairs.push(...r.extra);
    if (r.shuffle) pairs.reverse();
    return objectText(pairs);
  });

/** `base` with a few characters deleted, replaced or inserted. */
function mutated(base: string): fc.Arbitrary<string> {
  const edit = fc.tuple(fc.nat({ max: base.length }), fc.nat({ max: 4 }), fc.string({ maxLength: 4, unit: "binary" }));
  return fc.array(edit, { minLength: 1, maxLength: 3 }).map((edits) => {
    let line = base;
    for (const [at, remove, insert] of edits) {
      const pos = Math.min(at, line.length);
      line = line.slice(0, pos) + insert + line.slice(pos + remove);
    }
    return line;
  });
}

describe("fast cache-line check", () => {
  it("accepts ordinary entries, with zod's output, and leaves the unusual ones to zod", () => {
    const entry = { ...makeEntry("github", "create_issue"), params: { owner: "Repo owner", "": "x" }, fallback: "guard: too long" };
    const tally: Tally = { lines: 0, fastAccepted: 0, valid: 0 };
    for (const line of [lineOf(entry).trimEnd(), lineOf(makeEntry("s", "t")).trimEnd()]) checkLine(line, tally);
    expect(tally.fastAccepted).toBe(2);

    // The default for a missing params is zod's: an empty object.
    const { params: _params, ...noParams } = makeEntry("github", "no_params");
    const withoutParams = parseCacheLine(JSON.stringify(noParams));
    expect(withoutParams).toStrictEqual({ ok: true, entry: { ...noParams, params: {} } });
    expect(fastCheckCacheEntry(JSON.parse(JSON.stringify(noParams)))).toStrictEqual({ ...noParams, params: {} });

    // Unknown keys are zod's to strip, a __proto__ parameter zod's to drop.
    const extra = `${JSON.stringify(entry).slice(0, -1)},"note":"x"}`;
    expect(fastCheckCacheEntry(JSON.parse(extra))).toBeUndefined();
    expect(parseCacheLine(extra)).toStrictEqual({ ok: true, entry });
    const proto = JSON.stringify(entry).replace('"params":{', '"params":{"__proto__":"p",');
    expect(fastCheckCacheEntry(JSON.parse(proto))).toBeUndefined();
    expect(parseCacheLine(proto)).toStrictEqual({ ok: true, entry });
  });

  it("keeps zod's error messages for the lines it rejects", () => {
    const bad = parseCacheLine(JSON.stringify({ ...makeEntry("github", "x"), hash: "NOT-A-HASH" }));
    expect(bad).toMatchObject({ ok: false });
    expect(!bad.ok && bad.reason).toMatch(/^schema: hash: /);
    const negative = parseCacheLine(JSON.stringify({ ...makeEntry("github", "x"), tokensAfter: -1 }));
    expect(!negative.ok && negative.reason).toMatch(/^schema: tokensAfter: /);
    const mismatched = parseCacheLine(JSON.stringify({ ...makeEntry("github", "x"), key: "github:y:0000000000000000" }));
    expect(!mismatched.ok && mismatched.reason).toContain("does not match server:tool:hash");
  });

  it("agrees with zod on entries, each key removed or of another type, extra keys, null and arrays", () => {
    const entry = { ...makeEntry("github", "create_issue"), params: { owner: "Repo owner" }, fallback: "guard: too long" };
    const { params: _params, ...noParams } = makeEntry("s", "t");
    const formTokens = { renderer: 1, full: 120, summary: 40, names: 30, types: 33, none: 25 };
    const tally = checkAgreement(cachePair, {
      valid: [
        entry,
        noParams,
        { ...entry, summary: "" },
        { ...entry, tokensBefore: 0 },
        { ...entry, formTokens },
        { ...entry, formTokens: { ...formTokens, renderer: 7 } },
      ],
      invalid: [
        { ...entry, formTokens: { ...formTokens, renderer: 0 } },
        { ...entry, formTokens: { ...formTokens, none: -1 } },
        { ...entry, formTokens: { ...formTokens, full: 2.5 } },
        { ...entry, formTokens: null },
        { ...entry, hash: "0123456789ABCDEF" },
        { ...entry, tokensAfter: -1 },
        { ...entry, tokensBefore: 1.5 },
        { ...entry, server: "" },
        { ...entry, params: { owner: 1 } },
        { ...entry, fallback: null },
      ],
    });
    // Every valid variant but the unusual ones was taken by the fast check.
    expect(tally.fastAccepted).toBeGreaterThan(4);
    // Counts are on the fast path too, with their own renderer version whatever it is.
    expect(fastCheckCacheEntry(JSON.parse(JSON.stringify({ ...entry, formTokens })))).toStrictEqual({ ...entry, formTokens });
  });

  it("agrees with zod on generated entries", () => {
    const tally: Tally = { lines: 0, fastAccepted: 0, valid: 0 };
    fc.assert(
      fc.property(entryLine, (line) => checkLine(line, tally)),
      { seed: SEED, numRuns: RUNS },
    );
    // Both outcomes are common, so neither side of the comparison is vacuous.
    expect(tally.fastAccepted).toBeGreaterThan(RUNS / 10);
    expect(tally.lines - tally.valid).toBeGreaterThan(RUNS / 10);
  });

  it("agrees with zod on mutated lines", () => {
    const tally: Tally = { lines: 0, fastAccepted: 0, valid: 0 };
    const base = lineOf({ ...makeEntry("github", "create_issue", "Create an issue."), params: { owner: "Repo owner", repo: "Repo name" } }).trimEnd();
    fc.assert(
      fc.property(mutated(base), (line) => checkLine(line, tally)),
      { seed: SEED, numRuns: RUNS },
    );
    fc.assert(
      fc.property(
        entryLine.chain((line) => mutated(line)),
        (line) => checkLine(line, tally),
      ),
      { seed: SEED, numRuns: RUNS },
    );
    expect(tally.fastAccepted).toBeGreaterThan(0);
  });
});
