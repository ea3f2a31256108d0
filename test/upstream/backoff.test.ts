import { describe, expect, it } from "vitest";
import { backoffDelayMs, DEFAULT_BACKOFF } from "../../src/upstream/backoff.js";

describe("backoffDelayMs", () => {
  it("grows by the factor up to the cap, with full jitter", () => {
    const top = () => 0.999999;
    expect(backoffDelayMs(0, DEFAULT_BACKOFF, top)).toBe(249);
    expect(backoffDelayMs(1, DEFAULT_BACKOFF, top)).toBe(499);
    expect(backoffDelayMs(3, DEFAULT_BACKOFF, top)).toBe(1999);
    expect(backoffDelayMs(20, DEFAULT_BACKOFF, top)).toBe(29_999);
    expect(backoffDelayMs(5, DEFAULT_BACKOFF, () => 0)).toBe(0);
    expect(backoffDelayMs(2, DEFAULT_BACKOFF, () => 0.5)).toBe(500);
  });
});
