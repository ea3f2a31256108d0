import { describe, expect, it } from "vitest";
import { didYouMean } from "../../src/util/suggest.js";

describe("didYouMean", () => {
  it("finds close keys and refuses far ones", () => {
    expect(didYouMean("comand", ["command", "args"])).toBe("command");
    expect(didYouMean("connectTimeoutMs", ["connect_timeout_ms", "timeout_ms"])).toBe("connect_timeout_ms");
    expect(didYouMean("zzz", ["command", "args"])).toBeUndefined();
  });
});
