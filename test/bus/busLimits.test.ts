/**
 * The worker's limits: calls running at once, calls waiting, `busy` answers past them, fairness
 * between requesters, and refresh requests coalesced and spaced out. Real nats-server, `abridge
 * bus` as a child process, an upstream whose calls and re-lists last until the test opens a gate.
 * Every call sent gets an answer: each test counts them.
 */
import { existsSync, readFileSync } from "node:fs";
import { mkdir, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import type { Msg, NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fixtureServerToml, writeConfig } from "../helpers/cliHarness.js";
import { waitFor } from "../helpers/waitFor.js";
import { body, BusRig, collect, requestHeaders, type Collector } from "./busHarness.js";

let rig: BusRig;
let raw: NatsConnection;
let dir: string;
let marker: string;

beforeAll(async () => {
  rig = await BusRig.open("bus-limits");
  ({ raw, dir, marker } = rig);
}, 60_000);

afterAll(async () => rig?.close());

/** The lines of a file the upstream process appends to: no event of ours announces them, so waits on them poll. */
function lines(file: string): string[] {
  return existsSync(file)
    ? readFileSync(file, "utf8")
        .split("\n")
        .filter((l) => l !== "")
    : [];
}

/** A folder of its own with the hold fixture's files, and a config serving it. */
async function holdSetup(name: string, extraToml = ""): Promise<{ config: string; arrivals: string; gates: string; lists: string; listHold: string }> {
  const folder = path.join(dir, name);
  const gates = path.join(folder, "gates");
  await mkdir(gates, { recursive: true });
  const arrivals = path.join(folder, "arrivals");
  const lists = path.join(folder, "lists");
  const listHold = path.join(folder, "list-hold");
  const args = ["--marker", marker, "--arrivals", arrivals, "--gates", gates, "--lists", lists, "--list-hold", listHold];
  const config = await writeConfig(
    folder,
    ['mode = "full"', 'cache_dir = "cache"', extraToml, fixtureServerToml("up", "../bus/holdServer.ts", args)].join("\n"),
  );
  return { config, arrivals, gates, lists, listHold };
}

/** Sends a call with reply subject `reply.<requester>.<id>` (the requester is the reply subject less its last token). */
function call(requester: string, id: string, tool: string, args: Record<string, unknown>, agent = "limits"): void {
  raw.publish(`tool.invoke.mcp.${agent}`, JSON.stringify({ id, agent, tool, arguments: args }), {
    headers: requestHeaders(),
    reply: `reply.${requester}.${id}`,
  });
}

function answerTo(answers: Collector, id: string): Promise<Msg> {
  return answers.next((m) => body(m).id === id, `the answer to ${id}`);
}

function outcome(msg: Msg): string {
  const answer = body(msg) as { ok: boolean; result?: { content: { text: string }[] }; error?: { code: string; retryable: boolean } };
  if (answer.ok) return answer.result!.content.map((c) => c.text).join("");
  return `${answer.error!.code}${answer.error!.retryable ? " (retryable)" : ""}`;
}

describe("abridge bus: limits on calls", () => {
  it("runs at most --max-concurrent calls (one requester a few fewer), queues --max-queued, answers the rest busy at once, shares fairly, and answers every call", async () => {
    const files = await holdSetup("calls");
    // 8 slots: one requester takes at most 7, so the eighth is left for the others.
    await rig.worker({ config: files.config, nats: rig.nats.url, agent: "limits", args: ["--max-concurrent", "8", "--max-queued", "4"] });
    const answers = await collect(raw, "reply.>");
    try {
      // Requester R: 15 held calls. 7 run, 4 wait, 4 are refused at once.
      const held = Array.from({ length: 15 }, (_, i) => `h${i + 1}`);
      for (const id of held) call("R", id, "up_hold", { name: id });
      for (const id of ["h12", "h13", "h14", "h15"]) expect(outcome(await answerTo(answers, id))).toBe("busy (retryable)");
      await waitFor(() => lines(files.arrivals).length >= 7, { what: "seven calls at the upstream" });
      expect(lines(files.arrivals).sort()).toEqual(["h1", "h2", "h3", "h4", "h5", "h6", "h7"]);
      const busy = body(await answerTo(answers, "h12")) as { error: { message: string } };
      expect(busy.error.message).toContain("at its limit (8 calls running, 4 waiting)");

      // Requester S gets the slot R may not take, while R's calls are all still held.
      call("S", "s1", "up_echo", { text: "through" });
      expect(outcome(await answerTo(answers, "s1"))).toBe("through");

      // T takes that slot again and holds it: now all 8 run, and R fills the queue.
      call("T", "t1", "up_hold", { name: "t1" });
      await waitFor(() => lines(files.arrivals).includes("t1"), { what: "t1 at the upstream" });
      // U arrives to a full queue: it waits in place of R's newest waiting call, which is refused.
      call("U", "u1", "up_echo", { text: "fair" });
      expect(outcome(await answerTo(answers, "h11"))).toBe("busy (retryable)");

      // R's waiting calls start only as R's running ones end: h8 cannot finish before h1 did.
      await writeFile(path.join(files.gates, "h8"), "");
      await writeFile(path.join(files.gates, "h1"), "");
      expect(outcome(await answerTo(answers, "h8"))).toBe("released h8");
      const order = answers.messages.map((m) => body(m).id);
      expect(order.indexOf("h1")).toBeGreaterThanOrEqual(0);
      expect(order.indexOf("h1")).toBeLessThan(order.indexOf("h8"));

      for (const id of [...held, "t1"]) await writeFile(path.join(files.gates, id), "");
      expect(outcome(await answerTo(answers, "u1"))).toBe("fair");
      for (const id of ["h1", "h2", "h3", "h4", "h5", "h6", "h7", "h9", "h10", "t1"]) expect(outcome(await answerTo(answers, id))).toBe(`released ${id}`);
      // Every call got exactly one answer: 15 of R's, and S's, T's and U's.
      await raw.flush();
      const ids = answers.messages.map((m) => String(body(m).id));
      expect(ids.sort()).toEqual([...held, "s1", "t1", "u1"].sort());
    } finally {
      answers.stop();
    }
  });

  it("counts the time a call waits in the queue against the worker's timeout", async () => {
    const files = await holdSetup("deadline");
    await rig.worker({ config: files.config, nats: rig.nats.url, agent: "deadline", args: ["--max-concurrent", "1", "--timeout-ms", "1500"] });
    const answers = await collect(raw, "reply.>");
    try {
      call("R", "d1", "up_hold", { name: "d1" }, "deadline");
      call("R", "d2", "up_hold", { name: "d2" }, "deadline");
      const first = body(await answerTo(answers, "d1")) as { error: { code: string; message: string } };
      expect(first.error).toMatchObject({ code: "timeout" });
      // d2 waited while d1 ran out its time: whether it is then given up at once or runs out what
      // is left of it, its answer says that time went by in the queue.
      const second = body(await answerTo(answers, "d2")) as { error: { code: string; retryable: boolean; message: string } };
      expect(second.error.retryable).toBe(true);
      expect(["busy", "timeout"]).toContain(second.error.code);
      expect(second.error.message).toMatch(/in the queue|in worker \S+'s queue/);
    } finally {
      answers.stop();
    }
  });

  it("takes the config's bus_max_concurrent and bus_max_queued", async () => {
    const files = await holdSetup("config", "bus_max_concurrent = 1\nbus_max_queued = 0");
    await rig.worker({ config: files.config, nats: rig.nats.url, agent: "configured" });
    const answers = await collect(raw, "reply.>");
    try {
      call("R", "c1", "up_hold", { name: "c1" }, "configured");
      call("R", "c2", "up_echo", { text: "no room" }, "configured");
      expect(outcome(await answerTo(answers, "c2"))).toBe("busy (retryable)");
      await writeFile(path.join(files.gates, "c1"), "");
      expect(outcome(await answerTo(answers, "c1"))).toBe("released c1");
    } finally {
      answers.stop();
    }
  });

  it("answers every one of a flood of calls (a result or busy) and stays connected", async () => {
    const files = await holdSetup("flood");
    const worker = await rig.worker({ config: files.config, nats: rig.nats.url, agent: "flood", args: ["--max-concurrent", "16", "--max-queued", "64"] });
    const answers = await collect(raw, "reply.>");
    try {
      const count = 5_000;
      for (let i = 0; i < count; i++) call("F", `f${i}`, "up_echo", { text: `f${i}` }, "flood");
      await raw.flush();
      await answers.until(() => answers.messages.length >= count, `${count} answers`, 120_000);
      const outcomes = new Map<string, number>();
      for (const m of answers.messages) {
        const o = outcome(m);
        const kind = o.startsWith("f") ? "result" : o;
        outcomes.set(kind, (outcomes.get(kind) ?? 0) + 1);
      }
      expect([...outcomes.keys()].sort()).toEqual(expect.arrayContaining(["result"]));
      expect([...outcomes.keys()].every((k) => k === "result" || k === "busy (retryable)")).toBe(true);
      expect(new Set(answers.messages.map((m) => body(m).id)).size).toBe(count);
      expect(worker.stderr()).not.toContain("lost the NATS server");
      // And it still serves.
      call("G", "after", "up_echo", { text: "still here" }, "flood");
      expect(outcome(await answerTo(answers, "after"))).toBe("still here");
    } finally {
      answers.stop();
    }
  });

  it("on SIGTERM answers the calls running and those waiting", async () => {
    const files = await holdSetup("stop");
    const worker = await rig.worker({ config: files.config, nats: rig.nats.url, agent: "stopping", args: ["--max-concurrent", "1", "--grace-ms", "300"] });
    const answers = await collect(raw, "reply.>");
    try {
      call("R", "s1", "up_hold", { name: "s1" }, "stopping");
      call("R", "s2", "up_hold", { name: "s2" }, "stopping");
      await waitFor(() => lines(files.arrivals).includes("s1"), { what: "s1 at the upstream" });
      expect(await worker.stop()).toBe(0);
      expect(outcome(await answerTo(answers, "s1"))).toBe("shutting_down (retryable)");
      expect(outcome(await answerTo(answers, "s2"))).toBe("shutting_down (retryable)");
      expect(lines(files.arrivals)).toEqual(["s1"]);
    } finally {
      answers.stop();
    }
  });
});

describe("abridge bus: refresh requests", () => {
  it("re-lists and publishes once for all the refreshes that came while one ran, and answers each with its own id", async () => {
    const files = await holdSetup("refresh", "bus_refresh_interval_ms = 200");
    const published = await collect(raw, "tool.meta.mcp.lists");
    await rig.worker({ config: files.config, nats: rig.nats.url, agent: "lists" });
    const answers = await collect(raw, "reply.>");
    try {
      await published.next((m) => body(m).reason === "start", "the list published at start");
      const listsAtStart = lines(files.lists).length;
      // The next re-list hangs until the test lets it go.
      await writeFile(files.listHold, "");
      raw.publish("tool.meta.mcp.refresh.lists", JSON.stringify({ id: "first" }), { headers: requestHeaders(), reply: "reply.Q.first" });
      await waitFor(() => lines(files.lists).length === listsAtStart + 1, { what: "the first re-list to reach the upstream" });
      // 300 more while it runs: 250 without a reply subject (two-byte bodies), 50 with one.
      for (let i = 0; i < 250; i++) raw.publish("tool.meta.mcp.refresh.lists", "{}", { headers: requestHeaders() });
      for (let i = 0; i < 50; i++)
        raw.publish("tool.meta.mcp.refresh.lists", JSON.stringify({ id: `r${i}` }), { headers: requestHeaders(), reply: `reply.Q.r${i}` });
      // The list as it is, answered at once: once it is here, the worker has read all of the above.
      raw.publish("tool.meta.mcp.refresh.lists", JSON.stringify({ id: "as-is", relist: false }), { headers: requestHeaders(), reply: "reply.Q.as-is" });
      expect(body(await answerTo(answers, "as-is"))).toMatchObject({ reason: "refresh", agent: "lists" });
      expect(answers.messages.map((m) => body(m).id)).toEqual(["as-is"]);
      await rm(files.listHold);

      const first = body(await answerTo(answers, "first")) as { tools: { name: string }[] };
      expect(first.tools.map((t) => t.name).sort()).toEqual(["up_echo", "up_hold"]);
      for (let i = 0; i < 50; i++) expect(body(await answerTo(answers, `r${i}`))).toMatchObject({ reason: "refresh", agent: "lists", id: `r${i}` });
      await raw.flush();
      // One re-list for the first request, one for all that came while it ran; one publish each.
      expect(lines(files.lists).length).toBe(listsAtStart + 2);
      const refreshes = published.messages.filter((m) => body(m).reason === "refresh");
      expect(refreshes.map((m) => body(m).id)).toEqual(["first", "r0"]);
      expect(answers.messages).toHaveLength(52);
    } finally {
      answers.stop();
      published.stop();
    }
  });
});
