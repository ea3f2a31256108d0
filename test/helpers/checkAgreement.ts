/**
 * Agreement of a schema and the hand-written fast check that stands in for it on a hot path.
 *
 * The schema stays the definition of the format; the fast check is an optimization and may only
 * ever say "valid" for a value the schema accepts. A fast check may leave some valid values to the
 * schema (unknown keys zod would strip, shapes the fast path does not serve), but only those the
 * pair names through `defers`: any other valid value it refuses would quietly take the slow path
 * and hide a drift between the two. Values are compared as `JSON.parse` makes them (every check
 * here reads parsed JSON), so each side gets its own fresh copy of each sample.
 */
import { expect } from "vitest";
import { isObject } from "../../src/model/json.js";

/** The part of a zod schema the comparison needs. */
export interface SchemaLike {
  safeParse(value: unknown): { success: true; data: unknown } | { success: false };
}

/** A schema and its fast check, with what the fast check may leave to the schema. */
export interface CheckPair {
  /** Names the pair in failure messages. */
  name: string;
  schema: SchemaLike;
  /** The fast check: true when it takes the value as valid. It may mutate the value it is given. */
  fast: (value: unknown) => boolean;
  /** Valid values the fast check may refuse (the schema then decides); default none. */
  defers?: (value: unknown) => boolean;
  /**
   * When the fast check accepts, the value it was given (after any mutation) must equal the
   * schema's output: the fast path hands on the value itself in place of the schema's copy.
   */
  sameOutput?: boolean;
}

/** What a run compared, so a test can show that both verdicts were exercised. */
export interface AgreementTally {
  samples: number;
  fastAccepted: number;
  schemaAccepted: number;
  deferred: number;
}

/** Values of every JSON type, given to each key in turn. */
const WRONG_VALUES: readonly unknown[] = [null, true, false, 0, -1, 1.5, "", "x", [], [1], {}, { a: 1 }];

/** A fresh copy, as `JSON.parse` would make it (an own `__proto__` key survives). */
function fresh(value: unknown): unknown {
  const text = JSON.stringify(value);
  return text === undefined ? undefined : (JSON.parse(text) as unknown);
}

/** `value` with the object at `path` replaced by `edit` of a copy of it. */
function editAt(value: unknown, path: readonly string[], edit: (target: Record<string, unknown>) => unknown): unknown {
  const copy = fresh(value);
  if (path.length === 0) return edit(copy as Record<string, unknown>);
  let parent = copy as Record<string, unknown>;
  for (const key of path.slice(0, -1)) parent = parent[key] as Record<string, unknown>;
  const last = path[path.length - 1]!;
  parent[last] = edit(parent[last] as Record<string, unknown>);
  return copy;
}

/** An own `__proto__` member, as `JSON.parse` makes one from text. */
function withProtoKey(target: Record<string, unknown>): Record<string, unknown> {
  const text = JSON.stringify(target);
  return JSON.parse(text === "{}" ? `{"__proto__":{"x":1}}` : `{"__proto__":{"x":1},${text.slice(1)}`) as Record<string, unknown>;
}

/**
 * Variants of `sample`: at the top and in each nested object down to `depth`, every key removed,
 * every key given a value of each other JSON type, an unknown key and an own `__proto__` key
 * added, the object replaced by null and wrapped in an array.
 */
export function variantsOf(sample: unknown, depth = 2): unknown[] {
  const out: unknown[] = [null, [sample], "x", 0, true];
  const walk = (at: unknown, path: string[]): void => {
    if (!isObject(at)) return;
    for (const key of Object.keys(at)) {
      out.push(
        editAt(sample, path, (target) => {
          delete target[key];
          return target;
        }),
      );
      for (const wrong of WRONG_VALUES) {
        if (JSON.stringify(wrong) === JSON.stringify(at[key])) continue;
        out.push(editAt(sample, path, (target) => ({ ...target, [key]: fresh(wrong) })));
      }
      if (path.length + 1 < depth) walk(at[key], [...path, key]);
    }
    out.push(editAt(sample, path, (target) => ({ ...target, extraKey: 1 })));
    out.push(editAt(sample, path, withProtoKey));
    if (path.length > 0) {
      out.push(editAt(sample, path, () => null));
      out.push(editAt(sample, path, (target) => [target]));
    }
  };
  walk(sample, []);
  return out;
}

/** Judges one value by both sides and asserts they agree; returns the two verdicts. */
export function assertAgreesOn(pair: CheckPair, value: unknown): { fast: boolean; schema: boolean } {
  const label = `${pair.name}: ${JSON.stringify(value)}`;
  const forSchema = fresh(value);
  const forFast = fresh(value);
  const parsed = pair.schema.safeParse(forSchema);
  const fast = pair.fast(forFast);
  if (fast) {
    expect(parsed.success, `the fast check accepted what the schema refuses; ${label}`).toBe(true);
    if (pair.sameOutput === true && parsed.success) expect(forFast, label).toStrictEqual(parsed.data);
  } else if (parsed.success) {
    expect(pair.defers?.(fresh(value)) ?? false, `the fast check refused a valid value it does not defer; ${label}`).toBe(true);
  }
  return { fast, schema: parsed.success };
}

/**
 * Asserts that `pair` agrees on every sample and every generated variant of the objects among
 * them: `valid` samples must be valid by the schema, `invalid` ones invalid (so a sample list
 * cannot drift from the schema unnoticed). Both verdicts must occur, so neither side of the
 * comparison is vacuous.
 */
export function checkAgreement(pair: CheckPair, samples: { valid: readonly unknown[]; invalid: readonly unknown[]; depth?: number }): AgreementTally {
  const tally: AgreementTally = { samples: 0, fastAccepted: 0, schemaAccepted: 0, deferred: 0 };
  const count = (value: unknown): { fast: boolean; schema: boolean } => {
    const verdict = assertAgreesOn(pair, value);
    tally.samples += 1;
    if (verdict.fast) tally.fastAccepted += 1;
    if (verdict.schema) tally.schemaAccepted += 1;
    if (verdict.schema && !verdict.fast) tally.deferred += 1;
    return verdict;
  };
  for (const value of samples.valid) expect(count(value).schema, `${pair.name}: valid sample refused by the schema: ${JSON.stringify(value)}`).toBe(true);
  for (const value of samples.invalid) expect(count(value).schema, `${pair.name}: invalid sample accepted by the schema: ${JSON.stringify(value)}`).toBe(false);
  for (const value of [...samples.valid, ...samples.invalid]) for (const variant of variantsOf(value, samples.depth)) count(variant);
  expect(tally.fastAccepted, `${pair.name}: the fast check accepted nothing`).toBeGreaterThan(0);
  expect(tally.samples - tally.schemaAccepted, `${pair.name}: every sample was valid`).toBeGreaterThan(0);
  return tally;
}
