import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { abridgeCommand } from "../helpers/abridgeCommand.js";
import { runAbridge, writeConfig } from "../helpers/cliHarness.js";
import type { FakeOpenAi } from "../helpers/fakeOpenAi.js";
import type { RedisServer } from "../helpers/redisServer.js";
import { waitFor } from "../helpers/waitFor.js";
import { fleetToml, useFleet } from "./fleetHarness.js";

describe("fleet: a host that dies mid-job", () => {
  let redis: RedisServer;
  let llm: FakeOpenAi;
  let dir: string;
  let marker: string;
  let child: ChildProcess | undefined;
  useFleet(
    "dies",
    (setup) => ({ redis, dir, marker, llm } = setup),
    () => {
      if (child !== undefined && child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      child = undefined;
    },
  );

  it("its lease runs out and another host does exactly the work that was left", async () => {
    const tools = 4;
    const total = tools + 2;
    const config = await writeConfig(
      dir,
      fleetToml({
        cacheUrl: redis.url(4),
        marker,
        tools,
        extra: ["cache_lease_ms = 1000"],
        // One tool per request, one request at a time: the dying host holds exactly one claim.
        summary: ['summarizer = "openai"', `base_url = ${JSON.stringify(llm.baseUrl)}`, "batch_size = 1", "max_concurrency = 1"],
      }),
    );
    // The first tool is answered, the second request is held open; after that every request is answered.
    llm.script({ kind: "ok" }, { kind: "hang" });
    const { command, args } = abridgeCommand(["summarize", "warm", "--config", config]);
    const dying = spawn(command, args, {
      cwd: dir,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, ABRIDGE_STATE_DIR: path.join(dir, "state-1") },
      stdio: ["ignore", "pipe", "pipe"],
    });
    child = dying;
    let childErr = "";
    dying.stderr?.on("data", (chunk: Buffer) => (childErr += chunk.toString("utf8")));
    dying.stdout?.resume();
    await waitFor(() => llm.requests.length === 2, { what: "the dying host's second request", timeoutMs: 60_000, detail: () => `its stderr: ${childErr}` });
    const done = llm.requests[0]!.tools;
    const held = llm.requests[1]!.tools;
    expect(done).toHaveLength(1);
    expect(held).toHaveLength(1);
    const admin = await redis.admin(4);
    try {
      // The first summary landed; the held tool's claim belongs to the dying host.
      await waitFor(async () => (await admin.hlen("abridge:summaries")) === 1, { what: "the first summary in Redis" });
      expect(await admin.keys("abridge:claim:*")).toHaveLength(1);

      const exited = new Promise<void>((resolve) => dying.once("exit", () => resolve()));
      dying.kill("SIGKILL");
      await exited;

      const survivor = await runAbridge(["summarize", "warm", "--config", config], { cwd: dir, env: { ABRIDGE_STATE_DIR: path.join(dir, "state-2") } });
      expect(survivor.stderr).not.toContain("failed");
      expect(survivor.code).toBe(0);
      // Exactly the remaining work: every tool but the one that landed, each asked once, the
      // dead host's tool included once its lease ran out.
      const afterDeath = llm.requests.slice(2).flatMap((r) => r.tools);
      expect(afterDeath).toContain(held[0]);
      expect(afterDeath).not.toContain(done[0]);
      expect(afterDeath).toHaveLength(total - 1);
      expect(new Set(afterDeath).size).toBe(total - 1);
      expect(await admin.hlen("abridge:summaries")).toBe(total);
      expect(await admin.keys("abridge:claim:*")).toEqual([]);
    } finally {
      admin.disconnect();
    }
  });
});
