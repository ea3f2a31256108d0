import { describe, expect, it } from "vitest";
import { expandVars } from "../../src/config/expandVars.js";

describe("expandVars", () => {
  it("reports what it substituted and leaves failed references as written", () => {
    const result = expandVars("a=${A} b=${B:-x${A}} c=${C} $${D} $E", { A: "1" });
    expect(result.value).toBe("a=1 b=x1 c=${C} ${D} $E");
    expect(result.substituted).toEqual(["1", "1"]);
    expect(result.problems).toEqual([expect.objectContaining({ variable: "C" })]);
  });

  it("treats ${env:NAME} as ${NAME}", () => {
    expect(expandVars("${env:HOME_DIR}", { HOME_DIR: "/h" }).value).toBe("/h");
  });
});
