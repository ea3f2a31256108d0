/** More filesystem tasks: a source tree, three overlapping contact lists, and orders summed into a file the task writes. */
import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { byCountThenName, listedFiles, Rng, splitMultiple, units } from "./seeded.js";
import type { CodeModeTask } from "./types.js";

const lineCount = (text: string): number => (text.endsWith("\n") ? text.split("\n").length - 1 : text.split("\n").length);
const exportedFunctions = (text: string): number => text.split("\n").filter((l) => /^export (async )?function /.test(l)).length;
const DIRS = ["api", "core", "db", "ui"];

function codeStats(files: Iterable<readonly [string, string]>): { exported: Record<string, number>; longest: { file: string; lines: number } } {
  const exported: Record<string, number> = {};
  let longest = { file: "", lines: -1 };
  for (const [file, text] of files) {
    const top = file.split("/")[0] as string;
    exported[top] = (exported[top] ?? 0) + exportedFunctions(text);
    const lines = lineCount(text);
    if (lines > longest.lines) longest = { file, lines };
  }
  return {
    exported: Object.fromEntries(
      Object.keys(exported)
        .sort()
        .map((k) => [k, exported[k] as number]),
    ),
    longest,
  };
}

const codeStatsTask: CodeModeTask = {
  name: "code-stats",
  prompt: "In src/ (60 TypeScript files in 4 folders), count the exported functions per folder and find the longest file.",
  async generate(ctx, seed) {
    const rng = new Rng(seed);
    const files: [string, string][] = [];
    for (const dir of DIRS) {
      await mkdir(path.join(ctx.dir, "src", dir), { recursive: true });
      for (let i = 0; i < 15; i++) {
        const lines = [`import { ${rng.pick(["log", "config", "db", "cache"])} } from "../core/base${i % 3}.js";`, ""];
        for (let f = rng.int(2, 7); f > 0; f--) {
          const name = `${rng.pick(["load", "save", "render", "parse", "check", "build"])}${rng.pick(["User", "Order", "Item", "Page", "Row"])}${f}`;
          lines.push(
            `/** ${rng.words(rng.int(5, 12))}. */`,
            `${rng.next() < 0.6 ? "export " : ""}${rng.next() < 0.3 ? "async " : ""}function ${name}(input: string): number {`,
          );
          for (let b = rng.int(2, 9); b > 0; b--) lines.push(`  const v${b} = input.length * ${rng.int(1, 99)}; // ${rng.words(rng.int(2, 6))}`);
          lines.push("  return 0;", "}", "");
        }
        files.push([`${dir}/${rng.pick(["handler", "model", "view", "util", "query"])}${String(i).padStart(2, "0")}.ts`, `${lines.join("\n")}\n`]);
      }
    }
    // One file clearly the longest, so the answer has no tie.
    const most = Math.max(...files.map(([, t]) => lineCount(t)));
    const pick = rng.int(0, files.length - 1);
    files[pick] = [files[pick]![0], `${files[pick]![1]}${Array.from({ length: most - lineCount(files[pick]![1]) + 7 }, (_, i) => `// ${i}`).join("\n")}\n`];
    for (const [file, text] of files) await writeFile(path.join(ctx.dir, "src", file), text);
    return codeStats(files);
  },
  async classic(s, ctx) {
    const src = path.join(ctx.dir, "src");
    const [found] = await s.turn({ tool: "filesystem_search_files", args: { path: src, pattern: "**/*.ts" } });
    const paths = (found as string).split("\n").filter((p) => p.endsWith(".ts"));
    const [text] = await s.turn({ tool: "filesystem_read_multiple_files", args: { paths } });
    return codeStats([...splitMultiple(text as string)].map(([p, body]) => [path.relative(src, p), body] as const));
  },
  search: "search files by pattern and read them",
  uses: ["filesystem.search_files", "filesystem.read_text_file"],
  program: (ctx) => `const src = ${JSON.stringify(path.join(ctx.dir, "src"))};
const { content: found } = await filesystem.search_files({ path: src, pattern: "**/*.ts" });
const paths = found.split("\\n").filter((p) => p.endsWith(".ts"));
const exported: Record<string, number> = {};
let longest = { file: "", lines: -1 };
const texts = await Promise.all(paths.map(async (p) => [p.slice(src.length + 1), (await filesystem.read_text_file({ path: p })).content] as [string, string]));
for (const [file, text] of texts) {
  const lines = text.split("\\n");
  const n = text.endsWith("\\n") ? lines.length - 1 : lines.length;
  const top = file.split("/")[0];
  exported[top] = (exported[top] ?? 0) + lines.filter((l) => /^export (async )?function /.test(l)).length;
  if (n > longest.lines) longest = { file, lines: n };
}
return { exported: Object.fromEntries(Object.keys(exported).sort().map((k) => [k, exported[k]])), longest };`,
};

const DOMAINS = [
  "acme.io",
  "globex.com",
  "initech.net",
  "umbrella.org",
  "hooli.dev",
  "stark.co",
  "wayne.biz",
  "tyrell.ai",
  "wonka.shop",
  "cyberdyne.tech",
  "soylent.food",
  "aperture.lab",
];
const CONTACT_FILES = ["crm.csv", "newsletter.csv", "events.csv"];

function dedupe(csvs: readonly string[]): { unique: number; topDomains: [string, number][] } {
  const emails = new Set<string>();
  for (const csv of csvs) {
    for (const line of csv.split("\n").slice(1)) if (line !== "") emails.add((line.split(",")[1] as string).toLowerCase());
  }
  const domains = new Map<string, number>();
  for (const e of emails) domains.set(e.split("@")[1] as string, (domains.get(e.split("@")[1] as string) ?? 0) + 1);
  return { unique: emails.size, topDomains: byCountThenName(domains).slice(0, 3) };
}

const contactsDedupe: CodeModeTask = {
  name: "contacts-dedupe",
  prompt: "How many distinct people (by email, any case) are in the three contact lists under contacts/, and which three email domains have the most?",
  async generate(ctx, seed) {
    const rng = new Rng(seed);
    const weights = DOMAINS.map(() => rng.int(1, 8));
    const people = Array.from({ length: 500 }, (_, i) => {
      let pick = rng.int(0, weights.reduce((a, b) => a + b, 0) - 1);
      let domain = DOMAINS[0] as string;
      for (let k = 0; k < DOMAINS.length; k++) {
        pick -= weights[k] as number;
        if (pick < 0) {
          domain = DOMAINS[k] as string;
          break;
        }
      }
      const first = rng.pick(["ana", "ben", "chen", "dara", "eli", "fay", "gus", "hana", "ivo", "jun"]);
      return { name: `${first} ${rng.pick(["smith", "ng", "khan", "lopez", "berg", "ito"])}`, email: `${first}.${i}@${domain}` };
    });
    await mkdir(path.join(ctx.dir, "contacts"), { recursive: true });
    const csvs: string[] = [];
    for (const file of CONTACT_FILES) {
      const rows = ["name,email,company,phone"];
      for (let r = 0; r < 250; r++) {
        const p = rng.pick(people);
        const email = rng.next() < 0.2 ? p.email.toUpperCase() : p.email;
        rows.push(`${p.name},${email},${rng.words(1)} ltd,+1-555-${String(rng.int(0, 9_999)).padStart(4, "0")}`);
      }
      csvs.push(`${rows.join("\n")}\n`);
      await writeFile(path.join(ctx.dir, "contacts", file), csvs.at(-1) as string);
    }
    return dedupe(csvs);
  },
  async classic(s, ctx) {
    const [text] = await s.turn({ tool: "filesystem_read_multiple_files", args: { paths: CONTACT_FILES.map((f) => path.join(ctx.dir, "contacts", f)) } });
    return dedupe([...splitMultiple(text as string).values()]);
  },
  search: "read a text file",
  uses: ["filesystem.read_text_file"],
  program: (ctx) => `const dir = ${JSON.stringify(path.join(ctx.dir, "contacts"))};
const emails = new Set<string>();
for (const f of ["crm.csv", "newsletter.csv", "events.csv"]) {
  const { content } = await filesystem.read_text_file({ path: dir + "/" + f });
  for (const line of content.split("\\n").slice(1)) if (line) emails.add(line.split(",")[1].toLowerCase());
}
const domains = new Map<string, number>();
for (const e of emails) { const d = e.split("@")[1]; domains.set(d, (domains.get(d) ?? 0) + 1); }
return { unique: emails.size, topDomains: [...domains].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).slice(0, 3) };`,
};

interface Order {
  order: string;
  customer: string;
  items: { sku: string; qty: number; unitPrice: number }[];
}

/** The summary file and the answer from orders, as both sessions compute them. */
function orderSummary(orders: readonly Order[]): { csv: string; answer: { customers: number; orders: number; grandTotal: number } } {
  const totals = new Map<string, { orders: number; total: number }>();
  for (const o of orders) {
    const t = totals.get(o.customer) ?? { orders: 0, total: 0 };
    t.orders += 1;
    t.total += o.items.reduce((sum, i) => sum + i.qty * i.unitPrice, 0);
    totals.set(o.customer, t);
  }
  const customers = [...totals.keys()].sort();
  const csv = `${["customer,orders,total", ...customers.map((c) => `${c},${totals.get(c)!.orders},${totals.get(c)!.total.toFixed(2)}`)].join("\n")}\n`;
  const grand = [...totals.values()].reduce((sum, t) => sum + t.total, 0);
  return { csv, answer: { customers: customers.length, orders: orders.length, grandTotal: Math.round(grand * 100) / 100 } };
}

let expectedSummary = "";

const orderSummaryTask: CodeModeTask = {
  name: "order-summary",
  prompt: "Total the 50 orders in orders/ per customer into orders/summary.csv, and say how many customers and the grand total.",
  async generate(ctx, seed) {
    const rng = new Rng(seed);
    const customers = Array.from({ length: 12 }, (_, i) => `customer-${String.fromCharCode(97 + i)}${rng.int(10, 99)}`);
    await mkdir(path.join(ctx.dir, "orders"), { recursive: true });
    const orders: Order[] = [];
    let cents = 0;
    for (let i = 1; i <= 50; i++) {
      const items = Array.from({ length: rng.int(1, 6) }, () => ({
        sku: `sku-${rng.int(100, 999)}`,
        qty: rng.int(1, 9),
        unitPrice: rng.int(99, 25_000) / 100,
      }));
      cents += items.reduce((sum, it) => sum + it.qty * Math.round(it.unitPrice * 100), 0);
      const order = {
        order: `ord-${String(i).padStart(4, "0")}`,
        customer: rng.pick(customers),
        placed: `2026-05-${String(rng.int(1, 28)).padStart(2, "0")}`,
        items,
        shipping: { street: `${rng.int(1, 999)} ${rng.words(2)} street`, city: rng.pick(["Lyon", "Porto", "Graz", "Turku"]), notes: rng.words(rng.int(6, 20)) },
      };
      orders.push(order);
      await writeFile(path.join(ctx.dir, "orders", `${order.order}.json`), `${JSON.stringify(order, null, 2)}\n`);
    }
    const { csv, answer } = orderSummary(orders);
    expectedSummary = csv;
    return { ...answer, grandTotal: units(cents) };
  },
  async classic(s, ctx) {
    const dir = path.join(ctx.dir, "orders");
    const [listing] = await s.turn({ tool: "filesystem_list_directory", args: { path: dir } });
    const files = listedFiles(listing as string).filter((f) => f.endsWith(".json"));
    const [text] = await s.turn({ tool: "filesystem_read_multiple_files", args: { paths: files.map((f) => path.join(dir, f)) } });
    const { csv, answer } = orderSummary([...splitMultiple(text as string).values()].map((body) => JSON.parse(body) as Order));
    await s.turn({ tool: "filesystem_write_file", args: { path: path.join(dir, "summary.csv"), content: csv } });
    return answer;
  },
  search: "list a directory, read files and write a file",
  uses: ["filesystem.list_directory", "filesystem.read_text_file", "filesystem.write_file"],
  program: (ctx) => `const dir = ${JSON.stringify(path.join(ctx.dir, "orders"))};
const { content: listing } = await filesystem.list_directory({ path: dir });
const files = listing.split("\\n").filter((l) => l.startsWith("[FILE] ") && l.endsWith(".json")).map((l) => l.slice(7));
const orders = await Promise.all(files.map(async (f) => JSON.parse((await filesystem.read_text_file({ path: dir + "/" + f })).content)));
const totals = new Map<string, { orders: number; total: number }>();
for (const o of orders) {
  const t = totals.get(o.customer) ?? { orders: 0, total: 0 };
  t.orders += 1;
  t.total += o.items.reduce((sum: number, i: { qty: number; unitPrice: number }) => sum + i.qty * i.unitPrice, 0);
  totals.set(o.customer, t);
}
const customers = [...totals.keys()].sort();
const csv = ["customer,orders,total", ...customers.map((c) => c + "," + totals.get(c)!.orders + "," + totals.get(c)!.total.toFixed(2))].join("\\n") + "\\n";
await filesystem.write_file({ path: dir + "/summary.csv", content: csv });
const grand = [...totals.values()].reduce((sum, t) => sum + t.total, 0);
return { customers: customers.length, orders: orders.length, grandTotal: Math.round(grand * 100) / 100 };`,
  async check(ctx) {
    const file = path.join(ctx.dir, "orders", "summary.csv");
    const written = await readFile(file, "utf8");
    await rm(file);
    if (written !== expectedSummary) throw new Error(`order-summary: summary.csv differs from the orders' totals:\n${written.slice(0, 300)}`);
  },
};

export const MORE_FILE_TASKS: readonly CodeModeTask[] = [codeStatsTask, contactsDedupe, orderSummaryTask];
