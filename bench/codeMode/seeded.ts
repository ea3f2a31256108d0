/** Deterministic data for the code-mode tasks: a seeded generator and the helpers the tasks share. */
import { createHash } from "node:crypto";
import { isObject } from "../../src/model/json.js";
import type { CallToolResult } from "../../src/model/types.js";

/** A small seeded generator (mulberry32): the same seed writes the same files on every machine. */
export class Rng {
  private state: number;
  constructor(seed: number) {
    this.state = seed >>> 0;
  }
  /** A float in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  /** An integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }
  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)] as T;
  }
  /** `items` in a random order (a copy). */
  shuffle<T>(items: readonly T[]): T[] {
    const out = [...items];
    for (let i = out.length - 1; i > 0; i--) {
      const j = Math.floor(this.next() * (i + 1));
      [out[i], out[j]] = [out[j] as T, out[i] as T];
    }
    return out;
  }
  /** `n` words of filler prose. */
  words(n: number): string {
    return Array.from({ length: n }, () => this.pick(WORDS)).join(" ");
  }
}

const WORDS = [
  "the",
  "service",
  "retries",
  "request",
  "queue",
  "within",
  "budget",
  "latency",
  "owner",
  "review",
  "draft",
  "plan",
  "release",
  "customer",
  "ticket",
  "migrate",
  "schema",
  "index",
  "cache",
  "report",
  "weekly",
  "team",
  "metric",
  "alert",
  "deploy",
  "rollback",
  "config",
  "storage",
  "network",
  "partner",
  "invoice",
  "ledger",
  "audit",
  "summary",
  "notes",
];

/** A seed per task: the run's seed mixed with the task's name, so adding a task changes no other task's data. */
export function taskSeed(seed: number, name: string): number {
  return createHash("sha256").update(`${seed}:${name}`).digest().readUInt32LE(0);
}

/** JSON with object keys sorted: two answers are the same when their canonical texts are. */
export function canonical(value: unknown): string {
  const sort = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(sort);
    if (isObject(v))
      return Object.fromEntries(
        Object.keys(v)
          .sort()
          .map((k) => [k, sort(v[k])]),
      );
    return v;
  };
  return JSON.stringify(sort(value));
}

/** The text of a result as a model reads it: its text blocks, one after another. */
export function textOf(result: CallToolResult): string {
  const content = Array.isArray(result.content) ? result.content : [];
  return content.map((block) => (isObject(block) && block.type === "text" && typeof block.text === "string" ? block.text : JSON.stringify(block))).join("\n");
}

/**
 * The files of a `read_multiple_files` answer (`<path>:\n<content>\n`, joined by `\n---\n`), by
 * path: how a model tells one file from the next in that text.
 */
export function splitMultiple(text: string): Map<string, string> {
  const files = new Map<string, string>();
  for (const chunk of text.split("\n---\n")) {
    const at = chunk.indexOf(":\n");
    if (at === -1) throw new Error(`read_multiple_files: no "<path>:" line in ${JSON.stringify(chunk.slice(0, 80))}`);
    const body = chunk.slice(at + 2);
    files.set(chunk.slice(0, at), body.endsWith("\n") ? body.slice(0, -1) : body);
  }
  return files;
}

/** The `[FILE] name` entries of a `list_directory` answer. */
export function listedFiles(text: string): string[] {
  return text
    .split("\n")
    .filter((line) => line.startsWith("[FILE] "))
    .map((line) => line.slice("[FILE] ".length).trim())
    .sort();
}

/** Entries sorted by count (largest first), then by name. */
export function byCountThenName<T extends readonly [string, number]>(entries: Iterable<T>): T[] {
  return [...entries].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
}

/** Cents as a number of currency units with two decimals. */
export function units(cents: number): number {
  return Math.round(cents) / 100;
}

/**
 * The JSON value of a result's text as a model reads it. In compact mode the bridge may write an
 * array of objects sharing their keys as a table, `{"@columns": [...], "@rows": [[...], ...]}`
 * (README, result formats); a model reads each row against the column names, and so does this.
 */
export function modelJson(text: string): unknown {
  const read = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(read);
    if (!isObject(v)) return v;
    const keys = Object.keys(v);
    if (keys.length === 2 && Array.isArray(v["@columns"]) && Array.isArray(v["@rows"])) {
      const columns = v["@columns"] as string[];
      return (v["@rows"] as unknown[][]).map((row) => Object.fromEntries(columns.map((c, i) => [c, read(row[i])])));
    }
    return Object.fromEntries(keys.map((k) => [k.replace(/^@(@+(?:columns|rows))$/, "$1"), read(v[k])]));
  };
  return read(JSON.parse(text));
}
