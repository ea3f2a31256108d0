import { createLogger, LOG_LEVELS } from "../log/logger.js";
import type { LogFields, Logger, LoggerOptions, LogLevel } from "../log/logger.js";

/**
 * A {@link Logger} whose level can change after it was handed out. The CLI needs its logger before
 * it knows the config (loading the config logs), yet the config's `log_level` is meant to set the
 * level; every child shares the one level, so a change reaches loggers already given to modules.
 */
export interface AdjustableLogger extends Logger {
  /** The level lines are filtered at now. */
  readonly level: LogLevel;
  /** Filters every line from now on (this logger and all its children) at `level`. */
  setLevel(level: LogLevel): void;
}

const rank = (level: LogLevel): number => LOG_LEVELS.indexOf(level);

/** Creates an {@link AdjustableLogger} starting at `options.level` (default `info`). */
export function createAdjustableLogger(options: LoggerOptions): AdjustableLogger {
  const state = { level: options.level ?? "info" };
  // The inner logger passes everything; the filter sits in front of it so that it can move.
  const inner = createLogger({ ...options, level: "debug" });
  const wrap = (target: Logger): Logger => {
    const at =
      (level: Exclude<LogLevel, "silent">) =>
      (message: string, fields?: LogFields): void => {
        if (rank(level) >= rank(state.level)) target[level](message, fields);
      };
    return { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error"), child: (fields) => wrap(target.child(fields)) };
  };
  const root = wrap(inner);
  return {
    ...root,
    get level() {
      return state.level;
    },
    setLevel(level: LogLevel) {
      state.level = level;
    },
  };
}

/** A logger that keeps its lines until {@link RecordingLogger.replay} passes them on. */
export interface RecordingLogger {
  logger: Logger;
  /** Sends every recorded line, in order, to `target`'s matching method and forgets them. */
  replay(target: Logger): void;
}

/**
 * Records log calls instead of emitting them: what the config loader says is held back until the
 * config's own `log_level` is known, so `log_level = "error"` also quiets the loader's warnings.
 */
export function recordingLogger(): RecordingLogger {
  const lines: { level: Exclude<LogLevel, "silent">; message: string; fields: LogFields }[] = [];
  const make = (bound: LogFields): Logger => {
    const at =
      (level: Exclude<LogLevel, "silent">) =>
      (message: string, fields?: LogFields): void => {
        lines.push({ level, message, fields: { ...bound, ...fields } });
      };
    return { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error"), child: (fields) => make({ ...bound, ...fields }) };
  };
  return {
    logger: make({}),
    replay(target) {
      for (const line of lines.splice(0)) target[line.level](line.message, Object.keys(line.fields).length > 0 ? line.fields : undefined);
    },
  };
}
