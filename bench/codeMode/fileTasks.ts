/**
 * Tasks over the filesystem server alone: a large file or many files read, a small answer
 * computed. Each writes its data from a seed and returns the answer the data implies; the classic
 * session reads the results' text and computes the answer as a model would, the program the same
 * from the values it gets.
 */
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { byCountThenName, listedFiles, Rng, splitMultiple, units } from "./seeded.js";
import type { CodeModeTask } from "./types.js";

const REGIONS = ["central", "east", "north", "south", "west"];

function regionTotals(csv: string): Record<string, number> {
  const totals: Record<string, number> = {};
  for (const line of csv.split("\n").slice(1)) {
    if (line === "") continue;
    const cells = line.split(",");
    const region = cells[2] as string;
    totals[region] = (totals[region] ?? 0) + Number(cells[5]);
  }
  return Object.fromEntries(
    Object.keys(totals)
      .sort()
      .map((k) => [k, Math.round((totals[k] as number) * 100) / 100]),
  );
}

const csvSum: CodeModeTask = {
  name: "csv-sum",
  prompt: "Total the amount column of sales.csv (2,000 rows) by region.",
  async generate(ctx, seed) {
    const rng = new Rng(seed);
    const prices = Array.from({ length: 40 }, () => rng.int(199, 9_999));
    const cents: Record<string, number> = {};
    const lines = ["id,date,region,product,units,amount"];
    for (let i = 1; i <= 2_000; i++) {
      const region = rng.pick(REGIONS);
      const product = rng.int(0, prices.length - 1);
      const n = rng.int(1, 20);
      const amount = n * (prices[product] as number);
      cents[region] = (cents[region] ?? 0) + amount;
      lines.push(
        `${i},2026-0${rng.int(1, 9)}-${String(rng.int(1, 28)).padStart(2, "0")},${region},sku-${String(product).padStart(3, "0")},${n},${(amount / 100).toFixed(2)}`,
      );
    }
    await writeFile(path.join(ctx.dir, "sales.csv"), `${lines.join("\n")}\n`);
    return Object.fromEntries(
      Object.keys(cents)
        .sort()
        .map((k) => [k, units(cents[k] as number)]),
    );
  },
  async classic(s, ctx) {
    const [csv] = await s.turn({ tool: "filesystem_read_text_file", args: { path: path.join(ctx.dir, "sales.csv") } });
    return regionTotals(csv as string);
  },
  search: "read a text file",
  uses: ["filesystem.read_text_file"],
  program: (ctx) => `const { content } = await filesystem.read_text_file({ path: ${JSON.stringify(path.join(ctx.dir, "sales.csv"))} });
const totals: Record<string, number> = {};
for (const line of content.split("\\n").slice(1)) {
  if (!line) continue;
  const cells = line.split(",");
  totals[cells[2]] = (totals[cells[2]] ?? 0) + Number(cells[5]);
}
return Object.fromEntries(Object.keys(totals).sort().map((k) => [k, Math.round(totals[k] * 100) / 100]));`,
};

const todoLines = (text: string): number => text.split("\n").filter((line) => line.includes("TODO")).length;

const todoTop3: CodeModeTask = {
  name: "todo-top3",
  prompt: "Which three of the 30 notes in notes/ have the most TODO lines?",
  async generate(ctx, seed) {
    const rng = new Rng(seed);
    const notes = path.join(ctx.dir, "notes");
    await mkdir(notes, { recursive: true });
    const counts = rng.shuffle(Array.from({ length: 30 }, (_, i) => i));
    const found: [string, number][] = [];
    for (let i = 0; i < 30; i++) {
      const todos = counts[i] as number;
      const lines = [`# Notes ${i + 1}: ${rng.words(3)}`, ""];
      for (let j = rng.int(40, 100); j > 0; j--)
        lines.push(rng.next() < 0.2 ? `## ${rng.words(2)}` : rng.next() < 0.5 ? `- ${rng.words(rng.int(4, 12))}` : `${rng.words(rng.int(8, 20))}.`);
      for (let t = 0; t < todos; t++) lines.splice(rng.int(2, lines.length), 0, `- [ ] TODO: ${rng.words(rng.int(3, 9))}`);
      const file = `note-${String(i + 1).padStart(2, "0")}.md`;
      await writeFile(path.join(notes, file), `${lines.join("\n")}\n`);
      found.push([file, todos]);
    }
    return byCountThenName(found)
      .slice(0, 3)
      .map(([file, todos]) => ({ file, todos }));
  },
  async classic(s, ctx) {
    const notes = path.join(ctx.dir, "notes");
    const [listing] = await s.turn({ tool: "filesystem_list_directory", args: { path: notes } });
    const files = listedFiles(listing as string).filter((f) => f.endsWith(".md"));
    const [text] = await s.turn({ tool: "filesystem_read_multiple_files", args: { paths: files.map((f) => path.join(notes, f)) } });
    const counts = [...splitMultiple(text as string)].map(([p, body]) => [path.basename(p), todoLines(body)] as const);
    return byCountThenName(counts)
      .slice(0, 3)
      .map(([file, todos]) => ({ file, todos }));
  },
  search: "list a directory and read files",
  uses: ["filesystem.list_directory", "filesystem.read_text_file"],
  program: (ctx) => `const dir = ${JSON.stringify(path.join(ctx.dir, "notes"))};
const { content: listing } = await filesystem.list_directory({ path: dir });
const files = listing.split("\\n").filter((l) => l.startsWith("[FILE] ") && l.endsWith(".md")).map((l) => l.slice(7));
const counts = await Promise.all(files.map(async (file) => {
  const { content } = await filesystem.read_text_file({ path: dir + "/" + file });
  return [file, content.split("\\n").filter((l) => l.includes("TODO")).length] as [string, number];
}));
counts.sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
return counts.slice(0, 3).map(([file, todos]) => ({ file, todos }));`,
};

const SERVICES = ["auth", "billing", "catalog", "checkout", "gateway", "inventory", "search", "shipping"];
const LOG_LINE = /^\S+ (\w+)\s+\[([^\]]+)\]/;

const logErrors: CodeModeTask = {
  name: "log-errors",
  prompt: "How many ERROR lines does app.log (1,000 lines) have, and which three services log the most of them?",
  async generate(ctx, seed) {
    const rng = new Rng(seed);
    const weights = SERVICES.map(() => rng.int(1, 6));
    const errors = new Map<string, number>();
    const lines: string[] = [];
    for (let i = 0; i < 1_000; i++) {
      const roll = rng.next();
      const level = roll < 0.8 ? "INFO" : roll < 0.92 ? "WARN" : "ERROR";
      let pick = rng.int(0, weights.reduce((a, b) => a + b, 0) - 1);
      let service = SERVICES[0] as string;
      for (let k = 0; k < SERVICES.length; k++) {
        pick -= weights[k] as number;
        if (pick < 0) {
          service = SERVICES[k] as string;
          break;
        }
      }
      if (level === "ERROR") errors.set(service, (errors.get(service) ?? 0) + 1);
      const ts = new Date(Date.UTC(2026, 2, 1) + i * 5_771).toISOString();
      lines.push(`${ts} ${level.padEnd(5)} [${service}] ${rng.words(rng.int(3, 8))} id=${rng.int(10_000, 99_999)}`);
    }
    await writeFile(path.join(ctx.dir, "app.log"), `${lines.join("\n")}\n`);
    return { errors: [...errors.values()].reduce((a, b) => a + b, 0), top: byCountThenName(errors).slice(0, 3) };
  },
  async classic(s, ctx) {
    const [log] = await s.turn({ tool: "filesystem_read_text_file", args: { path: path.join(ctx.dir, "app.log") } });
    const errors = new Map<string, number>();
    for (const line of (log as string).split("\n")) {
      const m = LOG_LINE.exec(line);
      if (m?.[1] === "ERROR") errors.set(m[2] as string, (errors.get(m[2] as string) ?? 0) + 1);
    }
    return { errors: [...errors.values()].reduce((a, b) => a + b, 0), top: byCountThenName(errors).slice(0, 3) };
  },
  search: "read a text file",
  uses: ["filesystem.read_text_file"],
  program: (ctx) => `const { content } = await filesystem.read_text_file({ path: ${JSON.stringify(path.join(ctx.dir, "app.log"))} });
const errors = new Map<string, number>();
let total = 0;
for (const line of content.split("\\n")) {
  const m = /^\\S+ (\\w+)\\s+\\[([^\\]]+)\\]/.exec(line);
  if (m && m[1] === "ERROR") { total++; errors.set(m[2], (errors.get(m[2]) ?? 0) + 1); }
}
const top = [...errors].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).slice(0, 3);
return { errors: total, top };`,
};

function drift(prod: Record<string, unknown>, staging: Record<string, unknown>): { changed: string[]; missingInStaging: string[]; onlyInStaging: string[] } {
  const keys = Object.keys(prod).sort();
  return {
    changed: keys.filter((k) => k in staging && JSON.stringify(prod[k]) !== JSON.stringify(staging[k])),
    missingInStaging: keys.filter((k) => !(k in staging)),
    onlyInStaging: Object.keys(staging)
      .filter((k) => !(k in prod))
      .sort(),
  };
}

const configDrift: CodeModeTask = {
  name: "config-drift",
  prompt: "Which settings differ between config/prod.json and config/staging.json (600 keys each)?",
  async generate(ctx, seed) {
    const rng = new Rng(seed);
    const prod: Record<string, unknown> = {};
    for (const service of SERVICES) {
      for (let i = 0; i < 75; i++) {
        const key = `${service}.${rng.pick(["http", "db", "cache", "queue", "log"])}.setting_${String(i).padStart(2, "0")}`;
        const kind = rng.int(0, 2);
        prod[key] = kind === 0 ? rng.int(1, 10_000) : kind === 1 ? rng.next() < 0.5 : `${rng.words(2).replace(" ", "-")}`;
      }
    }
    const staging: Record<string, unknown> = { ...prod };
    const keys = rng.shuffle(Object.keys(prod));
    for (const k of keys.slice(0, 9))
      staging[k] = typeof prod[k] === "number" ? (prod[k] as number) + rng.int(1, 50) : typeof prod[k] === "boolean" ? !prod[k] : `${String(prod[k])}-staging`;
    for (const k of keys.slice(9, 13)) delete staging[k];
    for (let i = 0; i < 3; i++) staging[`experiments.flag_${i}`] = true;
    const folder = path.join(ctx.dir, "config");
    await mkdir(folder, { recursive: true });
    await writeFile(path.join(folder, "prod.json"), `${JSON.stringify(prod, null, 2)}\n`);
    await writeFile(path.join(folder, "staging.json"), `${JSON.stringify(staging, null, 2)}\n`);
    return drift(prod, staging);
  },
  async classic(s, ctx) {
    const paths = ["prod.json", "staging.json"].map((f) => path.join(ctx.dir, "config", f));
    const [text] = await s.turn({ tool: "filesystem_read_multiple_files", args: { paths } });
    const files = splitMultiple(text as string);
    return drift(
      JSON.parse(files.get(paths[0] as string) as string) as Record<string, unknown>,
      JSON.parse(files.get(paths[1] as string) as string) as Record<string, unknown>,
    );
  },
  search: "read a text file",
  uses: ["filesystem.read_text_file"],
  program: (ctx) => `const dir = ${JSON.stringify(path.join(ctx.dir, "config"))};
const [prod, staging] = await Promise.all(["prod.json", "staging.json"].map(async (f) => JSON.parse((await filesystem.read_text_file({ path: dir + "/" + f })).content)));
const keys = Object.keys(prod).sort();
return {
  changed: keys.filter((k) => k in staging && JSON.stringify(prod[k]) !== JSON.stringify(staging[k])),
  missingInStaging: keys.filter((k) => !(k in staging)),
  onlyInStaging: Object.keys(staging).filter((k) => !(k in prod)).sort(),
};`,
};

export const FILE_TASKS: readonly CodeModeTask[] = [csvSum, todoTop3, logErrors, configDrift];
