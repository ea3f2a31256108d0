/**
 * Exit code of an abridge that refused to start because an abridge above it serves its config.
 * The parent sees its child exit with it and reports that server as `CONFIG_RECURSION` at once
 * (no timeout, no retries). Uncommon on purpose: a server that happens to exit with it at
 * start-up would be reported as this refusal. Shared by the CLI that exits with it and the
 * upstream connection that reads it, hence here at the ground floor.
 */
export const RECURSION_EXIT_CODE = 86;
