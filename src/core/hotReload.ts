import type { Config } from "../config/schema.js";

/** Settings opened or built once at start: an edit of one of them waits for a restart. */
const FIXED_AT_START = [
  "mode",
  "separator",
  "summary",
  "audit_log",
  "audit_arguments",
  "state_dir",
  "cache_dir",
  "cache_url",
  "cache_lease_ms",
  "compact_schema",
  "token_budget",
  "auto_update_minutes",
  "pin",
] as const;

/** What {@link reloadedConfig} decided. */
export interface ReloadedConfig {
  /** The config to put in force: the edited one, with every setting fixed at start kept as running. */
  config: Config;
  /** The settings that were edited but keep their running values until a restart. */
  needsRestart: string[];
}

/**
 * The config a hot reload puts in force. `mode`, `separator` and `[summary]` keep their running
 * values (front ends and cache keys depend on them), and so do the audit log (and whether it
 * records argument values), the state dir (spilled outputs), the cache and the catalog's
 * rendering settings, opened once at start: the config in force keeps their running values, so
 * nothing claims a setting that is not applied (turning audit_arguments off must not look done).
 */
export function reloadedConfig(running: Config, edited: Config): ReloadedConfig {
  const needsRestart: string[] = [];
  const kept: Partial<Record<(typeof FIXED_AT_START)[number], unknown>> = {};
  for (const key of FIXED_AT_START) {
    // Tables and lists compare by content; the rest are plain values.
    const same = typeof running[key] === "object" ? JSON.stringify(edited[key]) === JSON.stringify(running[key]) : edited[key] === running[key];
    if (!same) needsRestart.push(key);
    kept[key] = running[key];
  }
  return { config: { ...edited, ...kept } as Config, needsRestart };
}
