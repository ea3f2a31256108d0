/**
 * Records real tool results of published servers that run offline, for the result-shaping
 * benchmark (bench/resultShaping.ts) and the round-trip test: filesystem on a generated tree,
 * memory on a scratch file, everything, and sequential-thinking, each called directly over stdio
 * (no bridge in between) with the official SDK client. Every call's arguments and its result as
 * the server sent it go to `bench/corpus/results/<server>.jsonl`, one call a line.
 *
 *   npx tsx bench/recordResults.ts
 *
 * The tree and the memory file live in a fixed scratch folder (its paths appear in the results)
 * that is made anew on each run; contents come from a seeded generator, so a rerun differs only
 * in times and sizes the servers report.
 */
import { createRequire } from "node:module";
import { mkdir, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { REPO_ROOT } from "./corpus.js";
import { RESULTS_DIR, type RecordedCall } from "./recordedResults.js";
import { isMainModule } from "./standalone.js";
import { messageOf } from "../src/model/errors.js";

const require = createRequire(import.meta.url);
/** Where the generated tree and memory file live while recording (fixed: paths appear in results). */
const SCRATCH = "/tmp/abridge-result-corpus";

/** A small seeded generator (mulberry32), so the tree is the same on every run. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WORDS =
  "alpha beta gamma delta bridge server cache token result table column row value index model client stream config policy output limit schema tool call".split(
    " ",
  );
const NAMES = [
  "Ada",
  "Brook",
  "Cyril",
  "Dana",
  "Emil",
  "Farah",
  "Goran",
  "Hana",
  "Ivo",
  "Jun",
  "Kira",
  "Lev",
  "Mara",
  "Nils",
  "Oda",
  "Pia",
  "Quinn",
  "Rafa",
  "Sven",
  "Tove",
];

/** A 1x1 PNG, for read_media_file. */
const PNG_1X1 = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==", "base64");

/** Files of the generated tree: `dir/name` -> contents. */
function treeFiles(rand: () => number): Map<string, string | Buffer> {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(rand() * items.length)]!;
  const sentence = (n: number): string => Array.from({ length: n }, () => pick(WORDS)).join(" ");
  const files = new Map<string, string | Buffer>();
  const dirs = ["docs", "src", "src/core", "src/util", "data", "data/2026", "config", "notes"];
  for (const dir of dirs) {
    const count = 4 + Math.floor(rand() * 5);
    for (let i = 0; i < count; i++) {
      const kind = i % 4;
      if (kind === 0)
        files.set(`${dir}/readme-${i}.md`, `# ${sentence(3)}\n\n${Array.from({ length: 3 + Math.floor(rand() * 6) }, () => `${sentence(12)}.`).join("\n")}\n`);
      else if (kind === 1) {
        const rows = Array.from({ length: 3 + Math.floor(rand() * 12) }, (_, r) => ({
          id: r + 1,
          name: pick(NAMES),
          score: Math.round(rand() * 1000) / 10,
          active: rand() > 0.3,
          tags: [pick(WORDS), pick(WORDS)],
          note: rand() > 0.7 ? null : sentence(4),
        }));
        files.set(`${dir}/records-${i}.json`, `${JSON.stringify({ generated: "2026-11-27", rows }, null, 2)}\n`);
      } else if (kind === 2)
        files.set(
          `${dir}/module-${i}.ts`,
          `/** ${sentence(8)} */\nexport function ${pick(WORDS)}${i}(value: number): number {\n  return value * ${i + 1};\n}\n`,
        );
      else
        files.set(
          `${dir}/log-${i}.txt`,
          Array.from(
            { length: 5 + Math.floor(rand() * 20) },
            (_, l) => `2026-11-27T10:${String(l).padStart(2, "0")}:00Z ${pick(["INFO", "WARN", "DEBUG"])} ${sentence(6)}`,
          ).join("\n"),
        );
    }
  }
  files.set("data/pixel.png", PNG_1X1);
  files.set(
    "config/settings.json",
    `${JSON.stringify({ name: "demo", version: 3, features: { cache: true, spill: false }, servers: NAMES.slice(0, 5).map((n, i) => ({ name: n.toLowerCase(), port: 4000 + i, enabled: i % 2 === 0 })) }, null, 2)}\n`,
  );
  return files;
}

async function connect(command: string, args: string[], env: Record<string, string> = {}): Promise<Client> {
  const client = new Client({ name: "abridge-result-recorder", version: "1.0.0" });
  const childEnv: Record<string, string> = { PATH: process.env.PATH ?? "", HOME: SCRATCH, ...env };
  await client.connect(new StdioClientTransport({ command, args, env: childEnv, stderr: "ignore" }));
  return client;
}

/** Calls each `[tool, args]` in order and keeps what came back (a thrown error is recorded as its message). */
async function record(server: string, client: Client, calls: [string, Record<string, unknown>][]): Promise<RecordedCall[]> {
  const out: RecordedCall[] = [];
  for (const [tool, args] of calls) {
    try {
      const result = (await client.callTool({ name: tool, arguments: args })) as Record<string, unknown>;
      out.push({ server, tool, arguments: args, result });
    } catch (err) {
      out.push({ server, tool, arguments: args, result: { isError: true, content: [{ type: "text", text: messageOf(err) }] } });
    }
  }
  return out;
}

function filesystemCalls(root: string, files: Map<string, string | Buffer>): [string, Record<string, unknown>][] {
  const at = (p: string): string => path.join(root, p);
  const names = [...files.keys()];
  const dirs = [".", "docs", "src", "src/core", "src/util", "data", "data/2026", "config", "notes"];
  const calls: [string, Record<string, unknown>][] = [["list_allowed_directories", {}]];
  for (const dir of dirs) calls.push(["list_directory", { path: at(dir) }]);
  for (const dir of dirs) calls.push(["list_directory_with_sizes", { path: at(dir) }], ["list_directory_with_sizes", { path: at(dir), sortBy: "size" }]);
  for (const dir of [".", "src", "data", "docs"]) calls.push(["directory_tree", { path: at(dir) }]);
  calls.push(["directory_tree", { path: root, excludePatterns: ["**/*.txt"] }]);
  for (const name of names) calls.push(["get_file_info", { path: at(name) }]);
  for (const name of names.filter((n) => !n.endsWith(".png"))) calls.push(["read_text_file", { path: at(name) }]);
  for (const name of names.filter((n) => n.endsWith(".txt")).slice(0, 4))
    calls.push(["read_text_file", { path: at(name), head: 3 }], ["read_text_file", { path: at(name), tail: 2 }]);
  for (let i = 0; i + 3 <= Math.min(names.length, 24); i += 3)
    calls.push([
      "read_multiple_files",
      {
        paths: names
          .slice(i, i + 3)
          .filter((n) => !n.endsWith(".png"))
          .map(at),
      },
    ]);
  for (const pattern of ["*.json", "*.md", "readme", "module", "*.ts", "log-*", "nothing-matches"]) calls.push(["search_files", { path: root, pattern }]);
  calls.push(["read_media_file", { path: at("data/pixel.png") }], ["read_file", { path: at("config/settings.json") }]);
  calls.push(["create_directory", { path: at("out") }], ["create_directory", { path: at("out/nested") }]);
  for (let i = 0; i < 4; i++) calls.push(["write_file", { path: at(`out/written-${i}.txt`), content: `line one of ${i}\nline two of ${i}\n` }]);
  calls.push(["edit_file", { path: at("out/written-0.txt"), edits: [{ oldText: "line two of 0", newText: "the second line" }], dryRun: true }]);
  calls.push(["edit_file", { path: at("out/written-1.txt"), edits: [{ oldText: "line one of 1", newText: "first" }] }]);
  calls.push(["edit_file", { path: at("out/written-2.txt"), edits: [{ oldText: "not there", newText: "x" }] }]);
  calls.push(["move_file", { source: at("out/written-3.txt"), destination: at("out/nested/moved.txt") }]);
  calls.push(["read_text_file", { path: at("no/such/file.txt") }], ["list_directory", { path: "/etc" }]);
  return calls;
}

function memoryCalls(rand: () => number): [string, Record<string, unknown>][] {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(rand() * items.length)]!;
  const calls: [string, Record<string, unknown>][] = [["read_graph", {}]];
  const types = ["person", "project", "team", "service"];
  for (let batch = 0; batch < 10; batch++) {
    const entities = NAMES.slice(batch * 2, batch * 2 + 2).map((name) => ({
      name,
      entityType: pick(types),
      observations: Array.from(
        { length: 1 + Math.floor(rand() * 3) },
        () => `${pick(["works on", "prefers", "owns", "reviews"])} ${pick(WORDS)} ${pick(WORDS)}`,
      ),
    }));
    entities.push({ name: `${pick(WORDS)}-${batch}`, entityType: "project", observations: [`started in week ${batch + 1}`] });
    calls.push(["create_entities", { entities }]);
    const relations = Array.from({ length: 2 + Math.floor(rand() * 3) }, () => ({
      from: pick(NAMES.slice(0, batch * 2 + 2)),
      to: pick(NAMES.slice(0, batch * 2 + 2)),
      relationType: pick(["knows", "works_with", "reports_to", "mentors"]),
    }));
    calls.push(["create_relations", { relations }]);
    calls.push([
      "add_observations",
      { observations: [{ entityName: pick(NAMES.slice(0, batch * 2 + 2)), contents: [`noted ${pick(WORDS)} on day ${batch}`, `likes ${pick(WORDS)}`] }] },
    ]);
    calls.push(["read_graph", {}]);
  }
  for (const query of ["Ada", "project", "cache", "works", "team", "xyz", "mentors", "Hana", "token", "service", "week", "likes", "reviews", "person", "delta"])
    calls.push(["search_nodes", { query }]);
  for (let i = 0; i < 10; i++) calls.push(["open_nodes", { names: [pick(NAMES), pick(NAMES), pick(NAMES)] }]);
  calls.push(["delete_observations", { deletions: [{ entityName: "Ada", observations: ["not there"] }] }]);
  calls.push(["delete_relations", { relations: [{ from: "Ada", to: "Brook", relationType: "knows" }] }]);
  calls.push(["delete_entities", { entityNames: ["Tove", "Sven"] }]);
  calls.push(["read_graph", {}]);
  return calls;
}

function everythingCalls(): [string, Record<string, unknown>][] {
  const calls: [string, Record<string, unknown>][] = [];
  for (let i = 0; i < 8; i++) calls.push(["echo", { message: `message ${i}: ${WORDS.slice(i, i + 5).join(" ")}` }]);
  for (let i = 0; i < 8; i++) calls.push(["get-sum", { a: i * 7, b: i * 13 + 0.5 }]);
  for (const location of ["New York", "Chicago", "Los Angeles", "Oslo", "Tokyo"]) calls.push(["get-structured-content", { location }]);
  for (const count of [1, 2, 3, 5, 8, 10]) calls.push(["get-resource-links", { count }]);
  for (const resourceId of [1, 2, 3, 4]) calls.push(["get-resource-reference", { resourceType: "Text", resourceId }]);
  calls.push(["get-resource-reference", { resourceType: "Blob", resourceId: 5 }]);
  for (const messageType of ["error", "success", "debug"])
    calls.push(["get-annotated-message", { messageType }], ["get-annotated-message", { messageType, includeImage: true }]);
  calls.push(["get-tiny-image", {}], ["get-tiny-image", {}]);
  calls.push(["trigger-long-running-operation", { duration: 0.2, steps: 2 }]);
  calls.push(["gzip-file-as-resource", { name: "hello.txt.gz", data: "data:text/plain;base64,aGVsbG8gd29ybGQ=", outputType: "resource" }]);
  return calls;
}

function thinkingCalls(): [string, Record<string, unknown>][] {
  const calls: [string, Record<string, unknown>][] = [];
  for (let chain = 0; chain < 5; chain++) {
    const total = 4 + chain;
    for (let n = 1; n <= total; n++)
      calls.push([
        "sequentialthinking",
        {
          thought: `step ${n} of plan ${chain}: weigh ${WORDS[(n + chain) % WORDS.length]} against ${WORDS[(n * 3 + chain) % WORDS.length]}`,
          nextThoughtNeeded: n < total,
          thoughtNumber: n,
          totalThoughts: total,
        },
      ]);
    calls.push([
      "sequentialthinking",
      {
        thought: `revise step 2 of plan ${chain}`,
        nextThoughtNeeded: false,
        thoughtNumber: total + 1,
        totalThoughts: total + 1,
        isRevision: true,
        revisesThought: 2,
      },
    ]);
    calls.push([
      "sequentialthinking",
      {
        thought: `branch from step 1 of plan ${chain}`,
        nextThoughtNeeded: false,
        thoughtNumber: 2,
        totalThoughts: 3,
        branchFromThought: 1,
        branchId: `b${chain}`,
      },
    ]);
  }
  return calls;
}

async function main(): Promise<void> {
  await rm(SCRATCH, { recursive: true, force: true });
  const root = path.join(SCRATCH, "tree");
  const files = treeFiles(random(20261127));
  for (const [name, contents] of files) {
    await mkdir(path.dirname(path.join(root, name)), { recursive: true });
    await writeFile(path.join(root, name), contents);
  }
  const bin = (pkg: string): string => require.resolve(`${pkg}/dist/index.js`);
  const node = process.execPath;
  const servers: { server: string; client: () => Promise<Client>; calls: () => [string, Record<string, unknown>][] }[] = [
    { server: "filesystem", client: () => connect(node, [bin("@modelcontextprotocol/server-filesystem"), root]), calls: () => filesystemCalls(root, files) },
    {
      server: "memory",
      client: () => connect(node, [bin("@modelcontextprotocol/server-memory")], { MEMORY_FILE_PATH: path.join(SCRATCH, "memory.jsonl") }),
      calls: () => memoryCalls(random(7)),
    },
    { server: "everything", client: () => connect(node, [bin("@modelcontextprotocol/server-everything"), "stdio"]), calls: everythingCalls },
    {
      server: "sequential-thinking",
      client: () => connect(node, [bin("@modelcontextprotocol/server-sequential-thinking")], { DISABLE_THOUGHT_LOGGING: "true" }),
      calls: thinkingCalls,
    },
  ];
  await mkdir(RESULTS_DIR, { recursive: true });
  let total = 0;
  for (const s of servers) {
    const client = await s.client();
    try {
      const recorded = await record(s.server, client, s.calls());
      await writeFile(path.join(RESULTS_DIR, `${s.server}.jsonl`), `${recorded.map((r) => JSON.stringify(r)).join("\n")}\n`);
      total += recorded.length;
      process.stdout.write(`${s.server}: ${recorded.length} calls\n`);
    } finally {
      await client.close();
    }
  }
  process.stdout.write(`${total} calls recorded in ${path.relative(REPO_ROOT, RESULTS_DIR)}\n`);
  await rm(SCRATCH, { recursive: true, force: true });
}

if (isMainModule(import.meta.url)) {
  main().catch((err: unknown) => {
    process.stderr.write(`recordResults: ${messageOf(err)}\n`);
    process.exitCode = 1;
  });
}
