import { describe, expect, it } from "vitest";
import { runCodeMode, TASKS } from "../../bench/codeMode.js";
import { canonical, modelJson, splitMultiple } from "../../bench/codeMode/seeded.js";
import { sameAnswer, sessionTokens } from "../../bench/codeMode/sessions.js";

describe("bench/codeMode: classic and code sessions of the same tasks", () => {
  it("fails, naming the task, when the code session's answer differs from the classic one", async () => {
    const csvSum = TASKS.find((t) => t.name === "csv-sum")!;
    const wrong = { ...csvSum, name: "csv-sum-off-by-one", program: () => "return { central: 1 };" };
    await expect(runCodeMode({ tasks: [wrong] })).rejects.toThrow(/^csv-sum-off-by-one: the classic and the code session's answers differ/);
  });

  it("fails when the searches never declare a function the program calls", async () => {
    const csvSum = TASKS.find((t) => t.name === "csv-sum")!;
    const unknown = { ...csvSum, name: "csv-sum-undeclared", uses: ["filesystem.no_such_tool"] };
    await expect(runCodeMode({ tasks: [unknown] })).rejects.toThrow(/csv-sum-undeclared: search_tools never declared filesystem\.no_such_tool/);
  });

  it("refuses a task name it does not know, listing the tasks", async () => {
    await expect(runCodeMode({ tasks: ["no-such-task"] })).rejects.toThrow(/no task named no-such-task \(tasks: csv-sum, /);
  });
});

describe("bench/codeMode: reading results as a model does", () => {
  it("reads a compact-mode table as its rows, and an escaped @columns key as the upstream's own", () => {
    const text = JSON.stringify({
      entities: {
        "@columns": ["name", "tags"],
        "@rows": [
          ["a", ["x"]],
          ["b", []],
        ],
      },
      "@@columns": 1,
    });
    expect(modelJson(text)).toEqual({
      entities: [
        { name: "a", tags: ["x"] },
        { name: "b", tags: [] },
      ],
      "@columns": 1,
    });
    expect(modelJson('[{"a":1}]')).toEqual([{ a: 1 }]);
  });

  it("splits a read_multiple_files answer into its files, and says where a chunk has no path", () => {
    // The server writes `${path}:\n${content}\n` per file and joins them with "\n---\n".
    const files = splitMultiple(["/d/a.md:\nline 1\nline 2\n\n", "/d/b.md:\n\n"].join("\n---\n"));
    expect([...files]).toEqual([
      ["/d/a.md", "line 1\nline 2\n"],
      ["/d/b.md", ""],
    ]);
    expect(() => splitMultiple("no path here")).toThrow(/no "<path>:" line in "no path here"/);
  });

  it("counts a session's turns: K turns with calls and one for the answer, each reading the list", () => {
    const count = sessionTokens(
      20,
      [
        { written: 10, read: 100, calls: 1 },
        { written: 5, read: 50, calls: 3 },
      ],
      3,
    );
    expect(count).toEqual({
      turns: 3,
      calls: 4,
      listOnce: 20,
      list: 60,
      callText: 15,
      results: 150,
      answer: 3,
      tokens: 60 + 15 + 150 + 3,
      // Turn 1 is sent the list; turn 2 the list and turn 1; the answer turn the list and both; plus what the model wrote.
      transcriptTokens: 20 + (20 + 110) + (20 + 110 + 55) + 15 + 3,
    });
  });

  it("compares answers as canonical JSON: key order does not matter, values do", () => {
    expect(canonical({ b: 1, a: [{ d: 2, c: 3 }] })).toBe('{"a":[{"c":3,"d":2}],"b":1}');
    expect(() => sameAnswer("t", "answers", { a: 1, b: 2 }, { b: 2, a: 1 })).not.toThrow();
    expect(() => sameAnswer("t", "answers", { a: [1, 2] }, { a: [2, 1] })).toThrow(/^t: answers differ/);
  });
});
