import { readFileSync } from "node:fs";
import { createServer } from "node:net";

/** The median of `values` (NaN for none). */
export function median(values: readonly number[]): number {
  return percentile(values, 50);
}

/** The `p`th percentile (nearest rank) of `values` (NaN for none). */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank] as number;
}

/** Milliseconds since an arbitrary origin, sub-millisecond resolution. */
export function nowMs(): number {
  return performance.now();
}

/** Runs `fn` and returns how long it took in milliseconds with its value. */
export async function timed<T>(fn: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const start = nowMs();
  const value = await fn();
  return { ms: nowMs() - start, value };
}

/** A free TCP port on 127.0.0.1 (bound to port 0, read, released) for a child that needs one on its command line. */
export function freePort(signal?: AbortSignal): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    const onAbort = (): void => {
      server.close();
      reject(signal?.reason ?? new Error("aborted"));
    };
    signal?.addEventListener("abort", onAbort, { once: true });
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => {
        signal?.removeEventListener("abort", onAbort);
        if (typeof address === "object" && address !== null) resolve(address.port);
        else reject(new Error("no port"));
      });
    });
  });
}

/**
 * Peak resident memory of a live process in MiB (`VmHWM` in /proc/<pid>/status: the kernel's
 * high-water mark, so no sampling can miss a peak). Undefined when the process is gone or /proc is
 * not there.
 */
export function peakRssMiB(pid: number): number | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const kb = /^VmHWM:\s+(\d+)\s+kB/m.exec(status)?.[1];
    return kb === undefined ? undefined : Number(kb) / 1024;
  } catch {
    return undefined;
  }
}

/**
 * Resident memory of a live process in KiB: `VmRSS` now, or `VmHWM`, the kernel's high-water mark.
 * NaN when the process is gone or /proc is not there.
 */
export function processMemoryKiB(pid: number, field: "VmRSS" | "VmHWM"): number {
  try {
    const kb = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
    return kb === undefined ? Number.NaN : Number(kb);
  } catch {
    return Number.NaN;
  }
}

/** User plus system CPU time of a live process in ms (all its threads), or undefined without it or /proc. */
export function processCpuMs(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    // The command name (field 2) may hold spaces; the fields after its closing parenthesis do not.
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const ticks = Number(fields[11]) + Number(fields[12]);
    // USER_HZ is 100 on every Linux the bench runs on.
    return Number.isFinite(ticks) ? ticks * 10 : undefined;
  } catch {
    return undefined;
  }
}

/** The positive integer after `--name` on a command line, undefined when the flag is absent. */
export function positiveFlag(argv: readonly string[], name: string): number | undefined {
  const i = argv.indexOf(`--${name}`);
  if (i === -1) return undefined;
  const value = Number(argv[i + 1]);
  if (!Number.isInteger(value) || value <= 0) throw new Error(`--${name}: expected a positive integer, got ${argv[i + 1]}`);
  return value;
}

/** Sleeps `ms`, ending early (rejecting) when `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** Rounds for display and JSON: `digits` decimals. */
export function round(value: number, digits = 2): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}
