/** Where a daemon listens, as its lockfile writes it. */

/** A daemon address: `127.0.0.1:<port>` or `unix:<path>`. */
export type DaemonAddress = { kind: "tcp"; host: string; port: number } | { kind: "unix"; path: string };

/** Formats an address for the lockfile. */
export function formatAddress(address: DaemonAddress): string {
  return address.kind === "unix" ? `unix:${address.path}` : `${address.host}:${address.port}`;
}

/** Parses a lockfile address; undefined when malformed. */
export function parseAddress(text: string): DaemonAddress | undefined {
  if (text.startsWith("unix:")) {
    const path = text.slice("unix:".length);
    return path === "" ? undefined : { kind: "unix", path };
  }
  const colon = text.lastIndexOf(":");
  if (colon <= 0) return undefined;
  const port = Number(text.slice(colon + 1));
  if (!Number.isInteger(port) || port <= 0 || port > 65_535) return undefined;
  return { kind: "tcp", host: text.slice(0, colon), port };
}
