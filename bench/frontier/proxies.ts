/**
 * Selection proxies: stand-ins for "which tool would a model pick for this request, seeing this
 * text of each tool". Neither is a model; they bracket two kinds of reading. BM25 rewards the
 * exact words a view keeps (what a keyword-tuned summary games); the dense proxy compares meaning
 * with a small sentence encoder, so a view that keeps the sense in other words is not punished,
 * and a view stuffed with keywords gains less. The proxies are the bench's own, not the product's
 * search: a yardstick must not move when the thing it measures changes.
 */

/** One rankable tool: its `server:tool` key and the text the model sees of it. */
export interface RankDoc {
  key: string;
  text: string;
}

/** Options of {@link SelectionProxy.rankAll}. */
export interface RankOptions {
  /** How many keys each ranking keeps (default 10). */
  depth?: number;
  /**
   * Per query, the only keys it may rank (the tools a `search_tools` answer showed); undefined
   * for a query ranks every doc.
   */
  restrict?: readonly (readonly string[] | undefined)[];
}

/** A way to rank docs for queries. */
export interface SelectionProxy {
  readonly id: string;
  /** For each query, the keys of the best docs, best first. */
  rankAll(docs: readonly RankDoc[], queries: readonly string[], options?: RankOptions): Promise<string[][]>;
}

const STOPWORDS = new Set(
  "a an and are as at be by can do does for from has have how i in into is it its me my of on or our please show so that the their them then there these this those to up use used using was we what when where which will with you your".split(
    " ",
  ),
);

/** A light suffix folding so `issues`/`issue` and `created`/`create`/`creating` meet. */
function fold(word: string): string {
  if (word.length <= 3 || /\d/.test(word)) return word;
  let w = word;
  if (w.endsWith("ies") && w.length > 4) w = `${w.slice(0, -3)}y`;
  else if (/(?:ss|sh|ch|x|z)es$/.test(w)) w = w.slice(0, -2);
  else if (w.endsWith("ing") && w.length > 5) w = w.slice(0, -3);
  else if (w.endsWith("ed") && w.length > 4) w = w.slice(0, -2);
  else if (w.endsWith("s") && !/(?:ss|us|is)$/.test(w)) w = w.slice(0, -1);
  if (/([b-df-hj-np-tv-z])\1$/.test(w) && !/(?:ll|ss|zz)$/.test(w)) w = w.slice(0, -1);
  return w.length > 4 && w.endsWith("e") ? w.slice(0, -1) : w;
}

/** Index terms of `text`: camelCase, snake_case and kebab-case split, lowercased, stopwords out, folded. */
export function terms(text: string): string[] {
  const spaced = text.replace(/([a-z0-9])([A-Z])/g, "$1 $2").replace(/([A-Z]+)([A-Z][a-z])/g, "$1 $2");
  const out: string[] = [];
  for (const word of spaced.toLowerCase().split(/[^a-z0-9]+/)) {
    if (word !== "" && !STOPWORDS.has(word)) out.push(fold(word));
  }
  return out;
}

function topKeys(scored: { key: string; score: number }[], depth: number): string[] {
  scored.sort((a, b) => b.score - a.score || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return scored.slice(0, depth).map((s) => s.key);
}

/** BM25 (k1 1.2, b 0.75) over the docs' terms; document frequencies from the docs given. */
export class Bm25Proxy implements SelectionProxy {
  readonly id = "bm25";

  async rankAll(docs: readonly RankDoc[], queries: readonly string[], options: RankOptions = {}): Promise<string[][]> {
    const K1 = 1.2;
    const B = 0.75;
    const indexed = docs.map((d) => {
      const t = terms(d.text);
      const counts = new Map<string, number>();
      for (const term of t) counts.set(term, (counts.get(term) ?? 0) + 1);
      return { key: d.key, counts, length: t.length };
    });
    const df = new Map<string, number>();
    for (const d of indexed) for (const term of d.counts.keys()) df.set(term, (df.get(term) ?? 0) + 1);
    const n = indexed.length;
    const avg = n === 0 ? 1 : indexed.reduce((s, d) => s + d.length, 0) / n || 1;
    return queries.map((query, qi) => {
      const allowed = options.restrict?.[qi];
      const allowedSet = allowed === undefined ? undefined : new Set(allowed);
      const qterms = [...new Set(terms(query))];
      const scored: { key: string; score: number }[] = [];
      for (const d of indexed) {
        if (allowedSet !== undefined && !allowedSet.has(d.key)) continue;
        let score = 0;
        for (const term of qterms) {
          const tf = d.counts.get(term);
          if (tf === undefined) continue;
          const f = df.get(term) ?? 0;
          const idf = Math.log(1 + (n - f + 0.5) / (f + 0.5));
          score += (idf * tf * (K1 + 1)) / (tf + K1 * (1 - B + (B * d.length) / avg));
        }
        if (score > 0) scored.push({ key: d.key, score });
      }
      return topKeys(scored, options.depth ?? 10);
    });
  }
}

/** Something that turns texts into unit vectors (see denseEncoder.ts). */
export interface TextEmbedder {
  readonly id: string;
  embed(texts: readonly string[], signal?: AbortSignal): Promise<Float32Array[]>;
}

function dot(a: Float32Array, b: Float32Array): number {
  let s = 0;
  for (let i = 0; i < a.length; i += 1) s += (a[i] ?? 0) * (b[i] ?? 0);
  return s;
}

/** Cosine similarity of sentence embeddings of the query and of each doc's text. */
export class DenseProxy implements SelectionProxy {
  readonly id = "dense";

  constructor(
    private readonly embedder: TextEmbedder,
    private readonly signal?: AbortSignal,
  ) {}

  async rankAll(docs: readonly RankDoc[], queries: readonly string[], options: RankOptions = {}): Promise<string[][]> {
    const [docVectors, queryVectors] = [
      await this.embedder.embed(
        docs.map((d) => d.text),
        this.signal,
      ),
      await this.embedder.embed(queries, this.signal),
    ];
    return queryVectors.map((qv, qi) => {
      const allowed = options.restrict?.[qi];
      const allowedSet = allowed === undefined ? undefined : new Set(allowed);
      const scored: { key: string; score: number }[] = [];
      docs.forEach((d, i) => {
        const v = docVectors[i];
        if (v === undefined || (allowedSet !== undefined && !allowedSet.has(d.key))) return;
        scored.push({ key: d.key, score: dot(qv, v) });
      });
      return topKeys(scored, options.depth ?? 10);
    });
  }
}
