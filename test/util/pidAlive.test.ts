import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { isPidAlive } from "../../src/util/pidAlive.js";
import { waitFor } from "../helpers/waitFor.js";

const children: { kill: () => void }[] = [];
afterEach(() => {
  for (const child of children.splice(0)) child.kill();
});

describe("isPidAlive", () => {
  it("is true for a running process and false for a zombie nobody reaped yet", async () => {
    // `sh` starts a short `sleep` in the background, prints its pid, then becomes a long `sleep`, which never
    // reaps: the short one exits and stays a zombie (as a detached daemon does until init reaps it).
    const parent = spawn("sh", ["-c", "sleep 0.3 & echo $!; exec sleep 30"], { stdio: ["ignore", "pipe", "ignore"] });
    children.push({ kill: () => parent.kill("SIGKILL") });
    const zombie = await new Promise<number>((resolve) => parent.stdout.once("data", (b: Buffer) => resolve(Number(b.toString().trim()))));
    const state = (): string => {
      const stat = readFileSync(`/proc/${zombie}/stat`, "utf8");
      return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
    };
    // Only /proc tells that the child has exited unreaped: polled.
    await waitFor(() => state() === "Z", { what: `process ${zombie} to become a zombie`, detail: () => `state ${state()}` });
    expect(isPidAlive(zombie)).toBe(false);
    expect(isPidAlive(parent.pid!)).toBe(true);
    expect(isPidAlive(process.pid)).toBe(true);
    expect(isPidAlive(0)).toBe(false);
  });
});
