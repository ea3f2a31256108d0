/**
 * The daemon's wire protocol (see docs/daemon-protocol.md): one JSON object per line in each
 * direction, answered in order. Shared by the daemon and its client, so this module imports no
 * daemon code and the library can use it without pulling the daemon in.
 *
 * Split by message kind under protocol/: requests (with the hand check of `call_tool` beside its
 * schema), the `hello` exchange, answers (with the hand check of a call's answer beside its
 * schema), what answers carry, and addresses.
 */

/** Longest request or response line the daemon accepts (16 MiB), newline excluded. */
export const MAX_LINE_BYTES = 16 * 1024 * 1024;

export * from "./protocol/address.js";
export * from "./protocol/answers.js";
export * from "./protocol/hello.js";
export * from "./protocol/requests.js";
export * from "./protocol/results.js";
