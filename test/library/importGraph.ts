/**
 * The import graph of `src/`, read from the sources: which module imports which, and the folders
 * (layers) that makes. Shared by the layer test, the library-entry test and `npm run layers`.
 */
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";

/**
 * The layers of `src/`, bottom up: a module may import its own folder and the rows below it only.
 * A feature folder whose parts sit on different layers names each part (`daemon/wire`,
 * `daemon/server`, `daemon/client`): the feature is found by its folder, and each part keeps the
 * layer of what it does.
 */
export const LAYERS: readonly (readonly string[])[] = [
  ["model"],
  ["log", "util", "tokens"],
  ["result"],
  ["config", "code/runtime"],
  ["daemon/wire"],
  ["bus/wire"],
  ["cache"],
  ["summarize"],
  ["upstream"],
  ["catalog"],
  ["code/declarations"],
  ["policy"],
  ["code/view"],
  ["core"],
  ["serve", "daemon/server", "daemon/client", "bus/worker", "bus/client"],
  ["cli"],
  ["index.ts"],
];

/**
 * The front ends: they enter through the core and may not reach the layers under it. The library
 * entry (index.ts) is not one: it publishes a chosen list (the library API test holds it to that).
 */
export const FRONT_ENDS = ["serve", "daemon/server", "daemon/client", "bus/worker", "bus/client", "cli"] as const;

/** What a front end may import besides the front ends under it: the core, the wire protocols, the model and the base. */
export const FRONT_END_MAY_IMPORT = ["core", "daemon/wire", "bus/wire", "config", "model", "log", "util", "tokens"] as const;

export interface ImportEdge {
  /** Importing module, relative to src/ (`core/bridge.ts`). */
  from: string;
  /** Imported module, relative to src/. */
  to: string;
  /** `import type` / `export type`: erased at run time, still a dependency of the design. */
  typeOnly: boolean;
}

const SRC = path.resolve("src");

/** Every `.ts` module under src/, relative to it. */
export function sourceModules(): string[] {
  return (readdirSync(SRC, { recursive: true }) as string[])
    .filter((f) => f.endsWith(".ts"))
    .map((f) => f.split(path.sep).join("/"))
    .sort();
}

/** Every relative import and re-export of every module under src/. */
export function importEdges(): ImportEdge[] {
  const edges: ImportEdge[] = [];
  for (const from of sourceModules()) {
    const text = readFileSync(path.join(SRC, from), "utf8");
    for (const match of text.matchAll(/^(import|export)\s+(type\s+)?[^;]*?from\s+"(\.{1,2}\/[^"]+)"/gms)) {
      const target = path.resolve(path.dirname(path.join(SRC, from)), match[3]!.replace(/\.js$/, ".ts"));
      edges.push({ from, to: path.relative(SRC, target).split(path.sep).join("/"), typeOnly: match[2] !== undefined });
    }
    for (const match of text.matchAll(/import\(\s*"(\.{1,2}\/[^"]+)"\s*\)/g)) {
      const target = path.resolve(path.dirname(path.join(SRC, from)), match[1]!.replace(/\.js$/, ".ts"));
      edges.push({ from, to: path.relative(SRC, target).split(path.sep).join("/"), typeOnly: false });
    }
  }
  return edges;
}

/** Every folder named in {@link LAYERS}. */
const LAYER_FOLDERS = new Set(LAYERS.flat());

/**
 * The folder (layer) of a module: its first two path segments when {@link LAYERS} names them (a
 * part of a feature folder, `daemon/wire`), else its first segment, or the file itself at the top
 * of src/.
 */
export function folderOf(module: string): string {
  const parts = module.split("/");
  if (parts.length === 1) return module;
  const part = `${parts[0]}/${parts[1]}`;
  return parts.length > 2 && LAYER_FOLDERS.has(part) ? part : parts[0]!;
}

/** The row of {@link LAYERS} a folder is on, or -1 when it is on none. */
export function layerOf(folder: string): number {
  return LAYERS.findIndex((row) => row.includes(folder));
}

/** Folder to the folders it imports (its own left out), each with how many imports point there. */
export function folderGraph(edges: readonly ImportEdge[] = importEdges()): Map<string, Map<string, number>> {
  const graph = new Map<string, Map<string, number>>();
  for (const module of sourceModules()) if (!graph.has(folderOf(module))) graph.set(folderOf(module), new Map());
  for (const edge of edges) {
    const from = folderOf(edge.from);
    const to = folderOf(edge.to);
    if (from === to) continue;
    const row = graph.get(from)!;
    row.set(to, (row.get(to) ?? 0) + 1);
  }
  return graph;
}

/** The imports that break a rule, one line each (empty when the layering holds). */
export function layerViolations(edges: readonly ImportEdge[] = importEdges()): string[] {
  const problems: string[] = [];
  for (const folder of folderGraph(edges).keys()) {
    if (layerOf(folder) === -1) problems.push(`src/${folder} is on no layer of LAYERS`);
  }
  for (const edge of edges) {
    const from = folderOf(edge.from);
    const to = folderOf(edge.to);
    if (from === to) continue;
    const kind = edge.typeOnly ? "imports the types of" : "imports";
    const [a, b] = [layerOf(from), layerOf(to)];
    if (a === -1 || b === -1) continue;
    if (b > a) problems.push(`${edge.from} ${kind} ${edge.to}: upward, ${from} is under ${to}`);
    else if (b === a) problems.push(`${edge.from} ${kind} ${edge.to}: sideways, ${from} and ${to} are on one layer`);
    else if (
      (FRONT_ENDS as readonly string[]).includes(from) &&
      !(FRONT_END_MAY_IMPORT as readonly string[]).includes(to) &&
      !(FRONT_ENDS as readonly string[]).includes(to)
    ) {
      problems.push(`${edge.from} ${kind} ${edge.to}: the front end ${from} reaches under the core`);
    }
  }
  return problems;
}

/**
 * The layer table as markdown: each folder, its layer and what it imports; with `sizes`, also its
 * files and lines and how many import lines point to each folder (docs/architecture.md leaves them out, so
 * it changes only when the structure does).
 */
export function layerTable(edges: readonly ImportEdge[] = importEdges(), options: { sizes?: boolean } = {}): string {
  const graph = folderGraph(edges);
  const lines = new Map<string, number>();
  const files = new Map<string, number>();
  for (const module of sourceModules()) {
    const folder = folderOf(module);
    lines.set(folder, (lines.get(folder) ?? 0) + readFileSync(path.join(SRC, module), "utf8").split("\n").length - 1);
    files.set(folder, (files.get(folder) ?? 0) + 1);
  }
  const sizes = options.sizes ?? true;
  const rows = sizes
    ? ["| layer | folder | files | lines | imports (number of import lines) |", "|--:|---|--:|--:|---|"]
    : ["| layer | folder | imports |", "|--:|---|---|"];
  for (let i = LAYERS.length - 1; i >= 0; i--) {
    for (const folder of LAYERS[i]!) {
      if (!graph.has(folder)) continue;
      const imports = [...graph.get(folder)!.entries()]
        .sort((x, y) => layerOf(y[0]) - layerOf(x[0]) || (x[0] < y[0] ? -1 : 1))
        .map(([to, n]) => (sizes ? `${to} ${n}` : to))
        .join(", ");
      const name = folder.endsWith(".ts") ? `src/${folder}` : `src/${folder}/`;
      rows.push(
        sizes
          ? `| ${i} | \`${name}\` | ${files.get(folder)} | ${lines.get(folder)} | ${imports || "nothing"} |`
          : `| ${i} | \`${name}\` | ${imports || "nothing"} |`,
      );
    }
  }
  return rows.join("\n");
}
