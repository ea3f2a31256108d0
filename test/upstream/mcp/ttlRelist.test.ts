import { describe, expect, it } from "vitest";
import { TtlRelist } from "../../../src/upstream/mcp/ttlRelist.js";

describe("TtlRelist", () => {
  it("plans a re-list when a list's ttlMs runs out, and plans again from each new list", async () => {
    let fired!: () => void;
    const relisted = new Promise<void>((resolve) => (fired = resolve));
    const ttl = new TtlRelist(() => fired(), 5);
    ttl.listed(20);
    expect(ttl.scheduled).toBe(true);
    await relisted;
    expect(ttl.scheduled).toBe(false);
    ttl.listed(60_000);
    expect(ttl.scheduled).toBe(true);
    ttl.close();
  });

  it("no ttlMs, 0 (do not cache) or a value that is no number plan nothing, and a new list replaces the plan", () => {
    const ttl = new TtlRelist(() => {
      throw new Error("no re-list expected");
    });
    for (const value of [undefined, 0, -5, Number.NaN, Number.POSITIVE_INFINITY]) {
      ttl.listed(value);
      expect(ttl.scheduled).toBe(false);
    }
    ttl.listed(60_000);
    expect(ttl.scheduled).toBe(true);
    ttl.listed(0);
    expect(ttl.scheduled).toBe(false);
  });

  it("stop drops the plan; after close nothing is planned again", () => {
    const ttl = new TtlRelist(() => undefined);
    ttl.listed(60_000);
    ttl.stop();
    expect(ttl.scheduled).toBe(false);
    ttl.listed(60_000);
    expect(ttl.scheduled).toBe(true);
    ttl.close();
    ttl.listed(60_000);
    expect(ttl.scheduled).toBe(false);
  });
});
