import { readFile, stat } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { argumentDigest, AuditLog } from "../../src/policy/auditLog.js";
import { memoryLogger } from "../upstream/harness.js";
import { useTempDir } from "../helpers/tempDir.js";

const temp = useTempDir();
describe("AuditLog", () => {
  it("hashes canonical JSON: key order does not matter, values do", () => {
    expect(argumentDigest({ a: 1, b: [2, { c: 3, d: 4 }] })).toEqual(argumentDigest({ b: [2, { d: 4, c: 3 }], a: 1 }));
    expect(argumentDigest({ a: 1 }).argsHash).not.toBe(argumentDigest({ a: 2 }).argsHash);
    expect(argumentDigest({ s: "é" }).argsBytes).toBe(Buffer.byteLength('{"s":"é"}'));
  });

  it("appends whole lines from two writers at once (O_APPEND, one write per line), file mode 0600", async () => {
    const file = path.join(temp.path, "logs", "audit.jsonl");
    const [a, b] = await Promise.all([AuditLog.open({ file }), AuditLog.open({ file, includeArguments: true })]);
    const big = "v".repeat(5000);
    await Promise.all(
      Array.from({ length: 200 }, (_, i) => (i % 2 === 0 ? a! : b!).record({ server: "s", tool: `t${i}`, args: { big, i }, outcome: "ok", durationMs: 1 })),
    );
    await Promise.all([a!.close(), b!.close()]);
    const lines = (await readFile(file, "utf8")).trim().split("\n");
    expect(lines).toHaveLength(200);
    const records = lines.map((l) => JSON.parse(l) as { tool: string; arguments?: unknown });
    expect(new Set(records.map((r) => r.tool)).size).toBe(200);
    expect(records.filter((r) => r.arguments !== undefined)).toHaveLength(100);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
  });

  it("counts and logs a failing write instead of failing the call", async () => {
    const { logger, lines } = memoryLogger();
    const log = await AuditLog.open({ file: "/dev/full", logger });
    await expect(log.record({ server: "s", tool: "t", args: {}, outcome: "ok", durationMs: 0 })).resolves.toBeUndefined();
    expect(log.writeErrors).toBe(1);
    expect(lines.some((l) => l.includes("audit log write failed"))).toBe(true);
    await log.close();
  });

  it("fails to open with CACHE_IO when the folder cannot exist", async () => {
    await expect(AuditLog.open({ file: "/dev/null/audit.jsonl" })).rejects.toMatchObject({ code: "CACHE_IO" });
  });
});
