import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { FileReadError, readRegularFile } from "../../src/util/readRegularFile.js";
import { useTempDir } from "../helpers/tempDir.js";

describe("readRegularFile", () => {
  const temp = useTempDir({ prefix: "abridge-read-" });

  const refusal = (file: string, maxBytes: number, options = {}): Promise<FileReadError> =>
    readRegularFile(file, maxBytes, options).then(
      () => {
        throw new Error(`${file} was read`);
      },
      (err: unknown) => {
        expect(err).toBeInstanceOf(FileReadError);
        return err as FileReadError;
      },
    );

  it("reads a regular file up to the bound exactly, through a link unless told not to", async () => {
    const file = path.join(temp.path, "a.json");
    await writeFile(file, "é".repeat(8));
    expect(await readRegularFile(file, 16)).toBe("é".repeat(8));
    await symlink(file, path.join(temp.path, "link.json"));
    expect(await readRegularFile(path.join(temp.path, "link.json"), 16)).toBe("é".repeat(8));
    expect((await refusal(path.join(temp.path, "link.json"), 16, { noFollow: true })).message).toBe("cannot read it (ELOOP)");
    expect((await refusal(file, 15)).message).toBe("it is 16 bytes, over the 15-byte limit");
  });

  it("refuses a FIFO without waiting for a writer, a folder, and a missing file, saying which", async () => {
    const fifo = path.join(temp.path, "pipe");
    execFileSync("mkfifo", [fifo]);
    expect((await refusal(fifo, 1024)).message).toBe("it is a FIFO, not a regular file");
    await mkdir(path.join(temp.path, "folder"));
    expect((await refusal(path.join(temp.path, "folder"), 1024)).message).toBe("it is a directory, not a regular file");
    const missing = await refusal(path.join(temp.path, "none"), 1024);
    expect(missing.message).toBe("cannot read it (ENOENT)");
    expect(missing.code).toBe("ENOENT");
  });

  it("holds the bound on the bytes read, not on the stated size (a /proc file states 0 bytes)", async () => {
    expect(existsSync("/proc/self/status")).toBe(true);
    expect((await refusal("/proc/self/status", 16)).message).toBe("it holds more than 16 bytes, over the limit");
  });
});
