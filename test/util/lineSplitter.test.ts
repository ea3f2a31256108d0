import { describe, expect, it } from "vitest";
import { LineSplitter } from "../../src/util/lineSplitter.js";

describe("LineSplitter", () => {
  it("frames lines across chunks and keeps several lines of one chunk", () => {
    const splitter = new LineSplitter(100);
    expect(splitter.push(Buffer.from('{"a":'))).toEqual({ lines: [] });
    expect(splitter.push(Buffer.from('1}\n{"b":2}\r\n{"c"'))).toEqual({ lines: ['{"a":1}', '{"b":2}'] });
    expect(splitter.bufferedBytes).toBe(4);
    expect(splitter.push(Buffer.from(":3}\n"))).toEqual({ lines: ['{"c":3}'] });
  });

  it("does not split a multi-byte character cut between chunks", () => {
    const bytes = Buffer.from("héllo\n");
    const splitter = new LineSplitter(100);
    expect(splitter.push(bytes.subarray(0, 2)).lines).toEqual([]);
    expect(splitter.push(bytes.subarray(2)).lines).toEqual(["héllo"]);
  });

  it("fails once a line passes the bound, after the lines before it, and stays failed", () => {
    const splitter = new LineSplitter(10);
    const first = splitter.push(Buffer.from("short\n0123456789A"));
    expect(first.lines).toEqual(["short"]);
    expect(first.error?.code).toBe("DAEMON_BAD_REQUEST");
    expect(splitter.push(Buffer.from("\nok\n"))).toEqual({ lines: [] });
  });

  it("accepts a line of exactly the bound and fails on one byte more without a newline", () => {
    const splitter = new LineSplitter(10);
    expect(splitter.push(Buffer.from("0123456789\n")).lines).toEqual(["0123456789"]);
    const over = splitter.push(Buffer.from("01234567890"));
    expect(over.error).toBeDefined();
  });
});
