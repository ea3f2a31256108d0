import { watch, type FSWatcher } from "node:fs";
import path from "node:path";
import type { Config } from "../config/schema.js";
import { toAbridgeError } from "../model/errors.js";
import { silentLogger, type Logger } from "../log/logger.js";
import type { Bridge } from "./bridge.js";

/** Options of {@link ConfigWatcher}. */
export interface ConfigWatcherOptions {
  /** The config file in force. */
  file: string;
  /** Loads and validates the file again (the CLI's loader, with its secrets and environment). */
  load: () => Promise<Config>;
  bridge: Bridge;
  logger?: Logger;
  /** Quiet time after the last change event before reloading (default 200 ms). */
  debounceMs?: number;
  /** Told after every reload attempt (tests wait on it). */
  onReload?: (outcome: { ok: true; added: string[]; removed: string[]; changed: string[] } | { ok: false; error: Error }) => void;
}

/**
 * Watches the config file and applies edits to a running bridge. The folder is watched, not the
 * file: editors save by writing a new file and renaming it over the old one, which a watch on the
 * old inode would never see. An invalid edit is logged with the usual message and the running
 * config stays.
 */
export class ConfigWatcher {
  private watcher: FSWatcher | undefined;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> = Promise.resolve();
  private closed = false;
  private readonly logger: Logger;

  constructor(private readonly options: ConfigWatcherOptions) {
    this.logger = (options.logger ?? silentLogger).child({ config: options.file });
  }

  /** Starts watching. */
  start(): void {
    const dir = path.dirname(this.options.file);
    const base = path.basename(this.options.file);
    this.watcher = watch(dir, { persistent: false }, (_event, name) => {
      if (name !== null && name.toString() !== base) return;
      this.schedule();
    });
    this.watcher.on("error", (err) => this.logger.warn("config watch failed; edits are no longer applied", { error: err.message }));
  }

  private schedule(): void {
    if (this.closed) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      // One reload at a time, in order: a second edit waits for the first to be applied.
      this.running = this.running.then(() => this.reload());
    }, this.options.debounceMs ?? 200);
    this.timer.unref();
  }

  /** Loads the file and applies it; never throws. */
  async reload(): Promise<void> {
    if (this.closed) return;
    let config: Config;
    try {
      config = await this.options.load();
    } catch (err) {
      const error = toAbridgeError(err);
      this.logger.error(`config edit rejected; the running config stays:\n${error.message}`, { code: error.code });
      this.options.onReload?.({ ok: false, error });
      return;
    }
    try {
      const result = await this.options.bridge.applyConfig(config);
      if (result.needsRestart.length > 0) {
        this.logger.warn("config changes that take effect after a restart", { keys: result.needsRestart.join(",") });
      }
      this.logger.info("config reloaded", { added: result.added, removed: result.removed, changed: result.changed });
      this.options.onReload?.({ ok: true, added: result.added, removed: result.removed, changed: result.changed });
    } catch (err) {
      const error = toAbridgeError(err);
      this.logger.error("applying the edited config failed", { error: error.message });
      this.options.onReload?.({ ok: false, error });
    }
  }

  /** Stops watching and waits for a reload in progress. Idempotent. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.watcher?.close();
    await this.running;
  }
}
