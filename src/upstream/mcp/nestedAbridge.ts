import { realpathSync } from "node:fs";
import path from "node:path";
import { AbridgeError, ErrorCode } from "../../model/errors.js";

/**
 * Environment variable every stdio server abridge starts is given: a JSON array of the config
 * files served by the abridge processes above it, nearest last. Children get only the SDK's safe
 * default environment plus their own `env`, so it is added explicitly (see
 * `UpstreamConnectionOptions.childEnv`).
 */
export const PARENT_CONFIGS_ENV = "ABRIDGE_PARENT_CONFIGS";

export { RECURSION_EXIT_CODE } from "../../model/exitCodes.js";

/** A config file's identity across processes: its real path (symlinks resolved), or the resolved path. */
export function configPathIdentity(file: string): string {
  const resolved = path.resolve(file);
  try {
    return realpathSync(resolved);
  } catch {
    return resolved;
  }
}

/** The configs of the abridge processes above this one, from `env` (an unreadable value counts as none). */
export function parentConfigs(env: Record<string, string | undefined>): string[] {
  const text = env[PARENT_CONFIGS_ENV];
  if (text === undefined || text === "") return [];
  try {
    const value: unknown = JSON.parse(text);
    return Array.isArray(value) ? value.filter((v): v is string => typeof v === "string") : [];
  } catch {
    return [];
  }
}

/** True for a config that comes from a file (not the built-in defaults of `render`). */
function fromFile(source: string): boolean {
  return path.isAbsolute(source);
}

/**
 * Refuses to serve `configSource` when an abridge above this process serves it already: the
 * config lists abridge itself (a Claude `mcp.json` reused as abridge's config, still holding its
 * `abridge` entry), and each abridge would start the next one until the machine gives out.
 * abridge in front of abridge with another config is fine.
 *
 * @throws AbridgeError CONFIG_RECURSION naming the config.
 */
export function assertNotNested(configSource: string, env: Record<string, string | undefined>): void {
  if (!fromFile(configSource)) return;
  const self = configPathIdentity(configSource);
  if (!parentConfigs(env).includes(self)) return;
  throw new AbridgeError(
    ErrorCode.CONFIG_RECURSION,
    `refusing to serve ${self}: an abridge above this one serves it already (the config lists abridge itself)`,
    { details: { config: self } },
  );
}

/** The environment entry a child of the abridge serving `configSource` gets: its parents plus this config. */
export function childMarkerEnv(configSource: string, env: Record<string, string | undefined>): Record<string, string> {
  if (!fromFile(configSource)) return {};
  return { [PARENT_CONFIGS_ENV]: JSON.stringify([...parentConfigs(env), configPathIdentity(configSource)]) };
}

/** The error a parent reports for server `name` whose process exited with {@link RECURSION_EXIT_CODE}. */
export function recursionRefused(name: string): AbridgeError {
  return new AbridgeError(
    ErrorCode.CONFIG_RECURSION,
    `${name}: refused to start: it is abridge serving a config that an abridge above it serves already (the config lists abridge itself, which would start abridge again and again); remove the "${name}" entry from the config`,
    { details: { server: name } },
  );
}
