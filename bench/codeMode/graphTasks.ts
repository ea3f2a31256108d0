/**
 * Tasks that reach the memory server's knowledge graph and the everything server: results read
 * from files recorded as entities and relations, a graph queried, a tool called once per value
 * found in a file.
 */
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { isObject } from "../../src/model/json.js";
import { byCountThenName, listedFiles, modelJson, Rng, splitMultiple, textOf } from "./seeded.js";
import type { CodeModeTask, TaskContext } from "./types.js";

interface Graph {
  entities: { name: string; entityType: string; observations: string[] }[];
  relations: { from: string; to: string; relationType: string }[];
}

/** The whole graph, read without counting it. */
export async function readGraph(ctx: TaskContext): Promise<Graph> {
  const result = await ctx.call("memory_read_graph", {});
  return (isObject(result.structuredContent) ? result.structuredContent : modelJson(textOf(result))) as unknown as Graph;
}

interface Job {
  id: string;
  pipeline: string;
  status: "ok" | "failed" | "skipped";
  exitCode: number;
}

const failedEntities = (jobs: readonly Job[]) =>
  jobs
    .filter((j) => j.status === "failed")
    .map((j) => ({ name: j.id, entityType: "failed_job", observations: [`pipeline: ${j.pipeline}`, `exit code: ${j.exitCode}`] }));

let expectedFailed: string[] = [];

const failedJobs: CodeModeTask = {
  name: "failed-jobs",
  prompt: "Record each failed job among the 40 job reports in jobs/ in the memory graph (pipeline and exit code), and list them.",
  async generate(ctx, seed) {
    const rng = new Rng(seed);
    await mkdir(path.join(ctx.dir, "jobs"), { recursive: true });
    const failed: string[] = [];
    for (let i = 1; i <= 40; i++) {
      const status = rng.next() < 0.2 ? "failed" : rng.next() < 0.1 ? "skipped" : "ok";
      const job = {
        id: `job-${String(i).padStart(3, "0")}`,
        pipeline: rng.pick(["build", "test", "deploy", "lint"]),
        status,
        exitCode: status === "failed" ? rng.int(1, 137) : 0,
        startedAt: new Date(Date.UTC(2026, 5, 1) + i * 613_000).toISOString(),
        log: Array.from({ length: rng.int(15, 40) }, (_, k) => `[${k}] ${rng.words(rng.int(5, 12))}`),
      };
      if (status === "failed") failed.push(job.id);
      await writeFile(path.join(ctx.dir, "jobs", `${job.id}.json`), `${JSON.stringify(job, null, 2)}\n`);
    }
    expectedFailed = failed;
    return { failed, recorded: failed.length };
  },
  async classic(s, ctx) {
    const dir = path.join(ctx.dir, "jobs");
    const [listing] = await s.turn({ tool: "filesystem_list_directory", args: { path: dir } });
    const files = listedFiles(listing as string).filter((f) => f.endsWith(".json"));
    const [text] = await s.turn({ tool: "filesystem_read_multiple_files", args: { paths: files.map((f) => path.join(dir, f)) } });
    const jobs = [...splitMultiple(text as string).values()].map((body) => JSON.parse(body) as Job);
    const entities = failedEntities(jobs);
    await s.turn({ tool: "memory_create_entities", args: { entities } });
    return { failed: entities.map((e) => e.name).sort(), recorded: entities.length };
  },
  search: "read files; create entities in the knowledge graph",
  uses: ["filesystem.list_directory", "filesystem.read_text_file", "memory.create_entities"],
  program: (ctx) => `const dir = ${JSON.stringify(path.join(ctx.dir, "jobs"))};
const { content: listing } = await filesystem.list_directory({ path: dir });
const files = listing.split("\\n").filter((l) => l.startsWith("[FILE] ") && l.endsWith(".json")).map((l) => l.slice(7));
const jobs = await Promise.all(files.map(async (f) => JSON.parse((await filesystem.read_text_file({ path: dir + "/" + f })).content)));
const failed = jobs.filter((j) => j.status === "failed");
await memory.create_entities({ entities: failed.map((j) => ({ name: j.id, entityType: "failed_job", observations: ["pipeline: " + j.pipeline, "exit code: " + j.exitCode] })) });
return { failed: failed.map((j) => j.id).sort(), recorded: failed.length };`,
  async check(ctx) {
    const recorded = (await readGraph(ctx)).entities
      .filter((e) => e.entityType === "failed_job")
      .map((e) => e.name)
      .sort();
    if (JSON.stringify(recorded) !== JSON.stringify(expectedFailed))
      throw new Error(`failed-jobs: the graph holds ${JSON.stringify(recorded)}, expected ${JSON.stringify(expectedFailed)}`);
  },
};

const TEAMS = ["data", "design", "infra", "mobile", "payments", "platform", "search", "web"];
const CITIES = ["Berlin", "Lisbon", "Madrid", "Oslo", "Warsaw"];
let people: Graph["entities"] = [];
let colleagues: Graph["relations"] = [];

function berlinTeams(entities: Graph["entities"]): Record<string, number> {
  const teams: Record<string, number> = {};
  for (const e of entities) {
    if (e.entityType !== "person" || !e.observations.includes("city: Berlin")) continue;
    const team = e.observations.find((o) => o.startsWith("team: "))?.slice(6) ?? "none";
    teams[team] = (teams[team] ?? 0) + 1;
  }
  return Object.fromEntries(
    Object.keys(teams)
      .sort()
      .map((k) => [k, teams[k] as number]),
  );
}

const teamCity: CodeModeTask = {
  name: "team-city",
  prompt: "From the memory graph (300 people), how many people in Berlin are on each team?",
  async generate(_ctx, seed) {
    const rng = new Rng(seed);
    people = Array.from({ length: 300 }, (_, i) => ({
      name: `${rng.pick(["Ada", "Bo", "Cy", "Di", "Ed", "Flo", "Gil", "Hal"])} ${rng.pick(["Park", "Novak", "Silva", "Berg", "Ruiz"])} ${i}`,
      entityType: "person",
      observations: [`team: ${rng.pick(TEAMS)}`, `city: ${rng.pick(CITIES)}`, `joined: ${rng.int(2014, 2026)}`, `focus: ${rng.words(rng.int(3, 7))}`],
    }));
    colleagues = Array.from({ length: 200 }, () => ({ from: rng.pick(people).name, to: rng.pick(people).name, relationType: "works_with" }));
    return berlinTeams(people);
  },
  async prepare(ctx) {
    await ctx.call("memory_create_entities", { entities: people });
    await ctx.call("memory_create_relations", { relations: colleagues });
  },
  async classic(s) {
    const [text] = await s.turn({ tool: "memory_search_nodes", args: { query: "city: Berlin" } });
    return berlinTeams((modelJson(text as string) as Graph).entities);
  },
  search: "search nodes in the knowledge graph",
  uses: ["memory.search_nodes"],
  program: () => `const { entities } = await memory.search_nodes({ query: "city: Berlin" });
const teams: Record<string, number> = {};
for (const e of entities) {
  if (e.entityType !== "person" || !e.observations.includes("city: Berlin")) continue;
  const team = (e.observations.find((o: string) => o.startsWith("team: ")) ?? "team: none").slice(6);
  teams[team] = (teams[team] ?? 0) + 1;
}
return Object.fromEntries(Object.keys(teams).sort().map((k) => [k, teams[k]]));`,
};

const WEATHER_CITIES = ["Chicago", "Los Angeles", "New York"];

/** What the everything server's simulated weather says of each city (it is fixed in the server). */
const SIMULATED_TEMPERATURE: Record<string, number> = { Chicago: 36, "Los Angeles": 73, "New York": 33 };

function warmNights(trips: readonly { city: string; nights: number }[], temperature: (city: string) => number): { warmCities: string[]; nights: number } {
  const warmCities = WEATHER_CITIES.filter((c) => temperature(c) > 35);
  return { warmCities, nights: trips.filter((t) => warmCities.includes(t.city)).reduce((sum, t) => sum + t.nights, 0) };
}

const weatherTrips: CodeModeTask = {
  name: "weather-trips",
  prompt: "Of the 400 trips in trips.json, how many nights are booked in cities warmer than 35 degrees now (ask the weather tool)?",
  async generate(ctx, seed) {
    const rng = new Rng(seed);
    const trips = Array.from({ length: 400 }, (_, i) => ({
      id: `trip-${i + 1}`,
      traveller: `${rng.pick(["kim", "lee", "max", "noa", "ola"])}.${rng.int(1, 99)}`,
      city: rng.pick(WEATHER_CITIES),
      nights: rng.int(1, 14),
      purpose: rng.words(rng.int(3, 8)),
    }));
    await writeFile(path.join(ctx.dir, "trips.json"), `${JSON.stringify(trips, null, 2)}\n`);
    return warmNights(trips, (c) => SIMULATED_TEMPERATURE[c] as number);
  },
  async classic(s, ctx) {
    const [text] = await s.turn({ tool: "filesystem_read_text_file", args: { path: path.join(ctx.dir, "trips.json") } });
    const trips = modelJson(text as string) as { city: string; nights: number }[];
    const cities = [...new Set(trips.map((t) => t.city))].sort();
    const weather = await s.turn(...cities.map((location) => ({ tool: "everything_get-structured-content", args: { location } })));
    const temperature = new Map(cities.map((c, i) => [c, (modelJson(weather[i] as string) as { temperature: number }).temperature]));
    return warmNights(trips, (c) => temperature.get(c) ?? Number.NaN);
  },
  search: "read a text file; weather of a city",
  uses: ["filesystem.read_text_file", "everything.get_structured_content"],
  program: (ctx) => `const trips = JSON.parse((await filesystem.read_text_file({ path: ${JSON.stringify(path.join(ctx.dir, "trips.json"))} })).content);
const cities = [...new Set(trips.map((t: { city: string }) => t.city))].sort() as string[];
const temps = await Promise.all(cities.map((location) => everything.get_structured_content({ location })));
const warmCities = cities.filter((c, i) => temps[i].temperature > 35);
return { warmCities, nights: trips.filter((t) => warmCities.includes(t.city)).reduce((sum, t) => sum + t.nights, 0) };`,
};

interface Employee {
  name: string;
  title: string;
  dept: string;
  manager: string | null;
}

function orgAnswer(staff: readonly Employee[]): { entities: number; relations: number; largestTeam: { manager: string; reports: number } } {
  const reports = new Map<string, number>();
  for (const e of staff) if (e.manager !== null) reports.set(e.manager, (reports.get(e.manager) ?? 0) + 1);
  const [manager, n] = byCountThenName(reports)[0] as [string, number];
  return { entities: staff.length, relations: reports.size === 0 ? 0 : [...reports.values()].reduce((a, b) => a + b, 0), largestTeam: { manager, reports: n } };
}

let expectedOrg = { entities: 0, relations: 0 };

const orgChart: CodeModeTask = {
  name: "org-chart",
  prompt: "Record the 120 employees of employees.json in the memory graph (department, title, who reports to whom) and say who has the most direct reports.",
  async generate(ctx, seed) {
    const rng = new Rng(seed);
    const staff: Employee[] = [];
    for (let i = 0; i < 120; i++) {
      const name = `${rng.pick(["Ari", "Bea", "Cal", "Dov", "Eva", "Fin", "Gia", "Hux"])} ${rng.pick(["Moss", "Vale", "Reed", "Holt", "Cruz"])}-${i}`;
      // Managers come from the first few people: a tree with a handful of large teams.
      const manager = i === 0 ? null : (staff[Math.min(i - 1, rng.int(0, Math.min(i - 1, 11)))] as Employee).name;
      staff.push({
        name,
        title: rng.pick(["engineer", "analyst", "designer", "manager", "lead"]),
        dept: rng.pick(["eng", "ops", "sales", "finance"]),
        manager,
      });
    }
    const rows = staff.map((e) => ({
      ...e,
      email: `${e.name.toLowerCase().replace(/[^a-z0-9]+/g, ".")}@corp.example`,
      phone: `+44 20 ${rng.int(1000, 9999)} ${rng.int(1000, 9999)}`,
      location: rng.pick(["London", "Leeds", "Cork"]),
      bio: rng.words(rng.int(8, 18)),
    }));
    await writeFile(path.join(ctx.dir, "employees.json"), `${JSON.stringify(rows, null, 2)}\n`);
    const answer = orgAnswer(staff);
    expectedOrg = { entities: answer.entities, relations: answer.relations };
    return answer;
  },
  async classic(s, ctx) {
    const [text] = await s.turn({ tool: "filesystem_read_text_file", args: { path: path.join(ctx.dir, "employees.json") } });
    const staff = modelJson(text as string) as Employee[];
    await s.turn({
      tool: "memory_create_entities",
      args: { entities: staff.map((e) => ({ name: e.name, entityType: "employee", observations: [`dept: ${e.dept}`, `title: ${e.title}`] })) },
    });
    await s.turn({
      tool: "memory_create_relations",
      args: { relations: staff.filter((e) => e.manager !== null).map((e) => ({ from: e.name, to: e.manager as string, relationType: "reports_to" })) },
    });
    return orgAnswer(staff);
  },
  search: "read a text file; create entities and relations in the knowledge graph",
  uses: ["filesystem.read_text_file", "memory.create_entities", "memory.create_relations"],
  program: (ctx) => `const staff = JSON.parse((await filesystem.read_text_file({ path: ${JSON.stringify(path.join(ctx.dir, "employees.json"))} })).content);
await memory.create_entities({ entities: staff.map((e) => ({ name: e.name, entityType: "employee", observations: ["dept: " + e.dept, "title: " + e.title] })) });
const reportsTo = staff.filter((e) => e.manager !== null).map((e) => ({ from: e.name, to: e.manager, relationType: "reports_to" }));
await memory.create_relations({ relations: reportsTo });
const reports = new Map<string, number>();
for (const r of reportsTo) reports.set(r.to, (reports.get(r.to) ?? 0) + 1);
const [manager, n] = [...reports].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))[0];
return { entities: staff.length, relations: reportsTo.length, largestTeam: { manager, reports: n } };`,
  async check(ctx) {
    const graph = await readGraph(ctx);
    const entities = graph.entities.filter((e) => e.entityType === "employee").length;
    const relations = graph.relations.filter((r) => isObject(r) && r.relationType === "reports_to").length;
    if (entities !== expectedOrg.entities || relations !== expectedOrg.relations) {
      throw new Error(
        `org-chart: the graph holds ${entities} employees and ${relations} reports_to relations, expected ${expectedOrg.entities} and ${expectedOrg.relations}`,
      );
    }
  },
};

export const GRAPH_TASKS: readonly CodeModeTask[] = [failedJobs, teamCity, weatherTrips, orgChart];
