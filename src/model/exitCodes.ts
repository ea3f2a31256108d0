/**
 * Exit code of an abridge that refused to start because an abridge above it serves its config.
 * The parent sees its child exit with it and reports that server as `CONFIG_RECURSION` at once
 * (no timeout, no retries). Uncommon on purpose: a server that happens to exit with it at
 * start-up would be reported as this refusal. Shared by the CLI that exits with it and the
 * upstream connection that reads it, hence here at the ground floor.
 */
export const RECURSION_EXIT_CODE = 86;

/**
 * Exit code of `abridge summarize warm` when every call to the configured summarizer (an LLM
 * endpoint) failed, so every summary it wrote is the extractive fallback. Apart from the general
 * failure (1) so a script can tell "the endpoint is down or misconfigured" from "a server or the
 * cache failed"; `--allow-fallback` accepts the fallback and exits 0.
 */
export const SUMMARIZER_FAILED_EXIT_CODE = 3;
