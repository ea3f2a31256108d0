import type { SecretSet } from "../../log/logger.js";
import { agentNameProblem } from "../../bus/wire/busProtocol.js";
import { parseNatsUrl, type NatsSecurity } from "../../bus/wire/natsConnection.js";
import type { OptionSpec } from "../command.js";
import { usageError } from "../usageError.js";

/** The NATS credential and TLS options `abridge bus` and `abridge bus call` share. */
export const NATS_SECURITY_OPTIONS: Record<string, OptionSpec> = {
  "nats-creds": { type: "string", value: "FILE", description: "Log in to NATS with a .creds file (user JWT and nkey seed)" },
  "nats-nkey": { type: "string", value: "FILE", description: "Log in to NATS with the user nkey seed (SU...) in FILE" },
  "nats-tls-ca": { type: "string", value: "FILE", description: "TLS to NATS, trusting the CA certificate(s) in FILE" },
  "nats-tls-cert": { type: "string", value: "FILE", description: "TLS client certificate for NATS (with --nats-tls-key)" },
  "nats-tls-key": { type: "string", value: "FILE", description: "TLS client key for NATS (with --nats-tls-cert)" },
};

/** The {@link NatsSecurity} the options of {@link NATS_SECURITY_OPTIONS} name (files are read when connecting). */
export function natsSecurityFrom(values: Readonly<Record<string, unknown>>): NatsSecurity {
  const text = (name: string): string | undefined => (typeof values[name] === "string" ? (values[name] as string) : undefined);
  const tls = { caFile: text("nats-tls-ca"), certFile: text("nats-tls-cert"), keyFile: text("nats-tls-key") };
  const security: NatsSecurity = {};
  const creds = text("nats-creds");
  const nkey = text("nats-nkey");
  if (creds !== undefined) security.credsFile = creds;
  if (nkey !== undefined) security.nkeyFile = nkey;
  if (tls.caFile !== undefined || tls.certFile !== undefined || tls.keyFile !== undefined) {
    security.tls = {
      ...(tls.caFile !== undefined ? { caFile: tls.caFile } : {}),
      ...(tls.certFile !== undefined ? { certFile: tls.certFile } : {}),
      ...(tls.keyFile !== undefined ? { keyFile: tls.keyFile } : {}),
    };
  }
  return security;
}

/**
 * `--nats URL` and `--agent NAME`, both required: the URL checked (its credentials join the secrets
 * logs redact) and the agent's name checked. `agentRole` ends the missing-agent message.
 */
export function natsAgentFrom(
  values: Readonly<Record<string, unknown>>,
  secrets: SecretSet,
  agentRole: string,
): { natsText: string; url: Exclude<ReturnType<typeof parseNatsUrl>, { problem: string }>; agent: string } {
  const natsText = values.nats;
  if (typeof natsText !== "string") throw usageError("--nats URL is required, e.g. --nats nats://127.0.0.1:4222");
  const url = parseNatsUrl(natsText);
  if ("problem" in url) throw usageError(`--nats: ${url.problem}`);
  for (const secret of url.secrets) secrets.add(secret);
  const agent = values.agent;
  if (typeof agent !== "string") throw usageError(`--agent NAME is required: ${agentRole}`);
  const agentProblem = agentNameProblem(agent);
  if (agentProblem !== undefined) throw usageError(`--agent: ${agentProblem}`);
  return { natsText, url, agent };
}
