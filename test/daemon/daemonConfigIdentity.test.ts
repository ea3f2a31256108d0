/**
 * Which config a daemon serves: its lock names the config's path and hash, and a client asking
 * for another config, or for an edited content of the same file, is told instead of being
 * silently served by it.
 */
import path from "node:path";
import { writeFile } from "node:fs/promises";
import { describe, expect, it } from "vitest";
import { ensureDaemon } from "../../src/daemon/client/ensureDaemon.js";
import { lockFilePath, readLock } from "../../src/daemon/wire/lockfile.js";
import { isAbridgeError, messageOf } from "../../src/model/errors.js";
import { startDaemon, testSetup } from "./daemonHarness.js";

describe("the config a daemon serves", { timeout: 60_000 }, () => {
  it("refuses to hand out a daemon started for another config, or an older content of this one", async () => {
    const setup = await testSetup("");
    const daemon = await startDaemon(setup);
    const lock = await readLock(lockFilePath(setup.stateDir));
    expect(lock.state === "ok" && lock.lock.configPath === setup.configFile && lock.lock.configHash?.startsWith("sha256:")).toBe(true);
    expect(daemon.stats()).toMatchObject({ config: { path: setup.configFile } });

    // Same config: served.
    const same = await ensureDaemon({ stateDir: setup.stateDir, config: setup.configFile, timeoutMs: 10_000 });
    expect(same.info.pid).toBe(daemon.info.pid);

    const other = path.join(setup.dir, "other.toml");
    await writeFile(other, 'mode = "full"\n');
    const error = await ensureDaemon({ stateDir: setup.stateDir, config: other, timeoutMs: 10_000 }).catch((err: unknown) => err);
    expect(isAbridgeError(error, "DAEMON_CONFIG_MISMATCH")).toBe(true);
    const message = messageOf(error);
    expect(message).toContain(setup.configFile);
    expect(message).toContain(other);
    expect(message).toContain("daemon stop");
    expect(message).toContain("--state-dir");

    // Decision: an edited file is a mismatch too (the daemon read it once), not a silent reload.
    await writeFile(setup.configFile, `# edited\n`, { flag: "a" });
    const edited = await ensureDaemon({ stateDir: setup.stateDir, config: setup.configFile, timeoutMs: 10_000 }).catch((err: unknown) => err);
    expect(isAbridgeError(edited, "DAEMON_CONFIG_MISMATCH")).toBe(true);
    expect(messageOf(edited)).toContain("has changed");
  });
});
