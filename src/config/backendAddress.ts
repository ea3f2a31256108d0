/** Where a JSON-RPC backend listens: a unix socket path, or a TCP host and port. */
export type BackendAddress = { kind: "unix"; path: string } | { kind: "tcp"; host: string; port: number };

/**
 * Reads `unix:/path/to.sock` or `tcp:HOST:PORT` (config `jsonrpc`). The host of a TCP address may be
 * a name, an IPv4 address or a bracketed IPv6 address (`tcp:[::1]:7000`). Returns undefined for
 * anything else, so the config schema can say what was expected.
 */
export function parseBackendAddress(text: string): BackendAddress | undefined {
  if (text.startsWith("unix:")) {
    const path = text.slice("unix:".length);
    return path === "" ? undefined : { kind: "unix", path };
  }
  const tcp = /^tcp:(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/.exec(text);
  if (tcp === null) return undefined;
  const port = Number(tcp[2]);
  if (port < 1 || port > 65_535) return undefined;
  const host = tcp[1]!.startsWith("[") ? tcp[1]!.slice(1, -1) : tcp[1]!;
  return { kind: "tcp", host, port };
}

/** The address as the config writes it (the inverse of {@link parseBackendAddress}). */
export function formatBackendAddress(address: BackendAddress): string {
  if (address.kind === "unix") return `unix:${address.path}`;
  return `tcp:${address.host.includes(":") ? `[${address.host}]` : address.host}:${address.port}`;
}
