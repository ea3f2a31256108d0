/**
 * Memory of another process as Linux reports it in /proc/<pid>/status: current and peak
 * resident set, in bytes. Tests of hostile inputs bound how much a real abridge process grows.
 */
import { readFileSync } from "node:fs";

function statusField(pid: number, field: "VmRSS" | "VmHWM"): number {
  const text = readFileSync(`/proc/${pid}/status`, "utf8");
  const match = new RegExp(`^${field}:\\s+(\\d+) kB$`, "m").exec(text);
  if (!match) throw new Error(`no ${field} in /proc/${pid}/status`);
  return Number(match[1]) * 1024;
}

/** Resident set size of `pid` now, in bytes. */
export function rssBytes(pid: number): number {
  return statusField(pid, "VmRSS");
}

/** The highest resident set size `pid` has had so far, in bytes. */
export function peakRssBytes(pid: number): number {
  return statusField(pid, "VmHWM");
}

/** Bytes as MiB with one decimal, for messages. */
export function mib(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}
