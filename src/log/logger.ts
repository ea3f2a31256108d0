/** Log levels, most verbose first. */
export const LOG_LEVELS = ["debug", "info", "warn", "error", "silent"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** Structured fields attached to a log line. */
export type LogFields = Record<string, unknown>;

/**
 * The one logger every module receives through its constructor. The library never prints:
 * when serving over stdio, stdout belongs to the protocol, so the CLI's logger writes to stderr.
 */
export interface Logger {
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
  /** A logger that adds `fields` to every line (e.g. `{ server: "github" }`). */
  child(fields: LogFields): Logger;
}

/** Where finished lines go; the CLI passes a stderr writer, tests pass an array. */
export type LogSink = (line: string) => void;

/** Options of {@link createLogger}. */
export interface LoggerOptions {
  level?: LogLevel;
  sink: LogSink;
  /**
   * Secret strings (resolved `${VAR}` values from `env` and `headers`) that must never appear in a
   * log line. Shared by reference: the config loader adds to it as it resolves secrets.
   */
  secrets?: SecretSet;
  /** Emit one JSON object per line instead of `level message key=value`. */
  json?: boolean;
}

/** A set of secret values to redact, shared between the config loader and the logger. */
export class SecretSet {
  private readonly values = new Set<string>();

  /** Registers a value; values shorter than 4 characters are ignored (they would redact noise). */
  add(value: string): void {
    if (value.length >= 4) this.values.add(value);
  }

  get size(): number {
    return this.values.size;
  }

  /** Replaces every registered value in `text` with `***`. */
  redact(text: string): string {
    if (this.values.size === 0) return text;
    let out = text;
    // Longest first so a secret that contains another is replaced whole.
    for (const value of [...this.values].sort((a, b) => b.length - a.length)) {
      if (out.includes(value)) out = out.split(value).join("***");
    }
    return out;
  }
}

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };

function formatValue(value: unknown): string {
  if (value instanceof Error) return JSON.stringify(value.message);
  if (typeof value === "string") return /^[\w./:@-]+$/.test(value) ? value : JSON.stringify(value);
  return JSON.stringify(value) ?? String(value);
}

/** Creates a {@link Logger} that filters by level and redacts secrets from every line. */
export function createLogger(options: LoggerOptions): Logger {
  const threshold = RANK[options.level ?? "info"];
  const secrets = options.secrets ?? new SecretSet();

  const make = (bound: LogFields): Logger => {
    const emit = (level: LogLevel, message: string, fields?: LogFields): void => {
      if (RANK[level] < threshold) return;
      const all = { ...bound, ...fields };
      let line: string;
      if (options.json) {
        line = JSON.stringify({ time: new Date().toISOString(), level, message, ...all }, (_k, v: unknown) => (v instanceof Error ? v.message : v));
      } else {
        const extra = Object.entries(all)
          .filter(([, v]) => v !== undefined)
          .map(([k, v]) => `${k}=${formatValue(v)}`)
          .join(" ");
        line = `abridge ${level} ${message}${extra ? ` ${extra}` : ""}`;
      }
      options.sink(secrets.redact(line));
    };
    return {
      debug: (m, f) => emit("debug", m, f),
      info: (m, f) => emit("info", m, f),
      warn: (m, f) => emit("warn", m, f),
      error: (m, f) => emit("error", m, f),
      child: (fields) => make({ ...bound, ...fields }),
    };
  };
  return make({});
}

/** A logger that drops everything; the default where none is injected. */
export const silentLogger: Logger = createLogger({ level: "silent", sink: () => {} });
