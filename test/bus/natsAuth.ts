/**
 * Credentials and certificates for nats-servers that require them: a CA with a server and a client
 * certificate (openssl), nkey users, and an operator, an account and user JWTs in .creds files
 * (what `nsc` writes), minted here with the nkeys the NATS client ships.
 */
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { nkeys } from "@nats-io/transport-node";

/** Files of a test PKI. */
export interface TlsFiles {
  ca: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
}

/** A CA, a certificate for 127.0.0.1 and a client certificate, signed by it, in `dir`. */
export async function tlsFiles(dir: string): Promise<TlsFiles> {
  const file = (name: string): string => path.join(dir, name);
  const openssl = (args: string[]): void => void execFileSync("openssl", args, { stdio: ["ignore", "ignore", "pipe"] });
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
  openssl(["req", "-x509", ...ec, "-keyout", file("ca.key"), "-out", file("ca.pem"), "-days", "2", "-subj", "/CN=abridge test CA"]);
  await writeFile(file("server.ext"), "subjectAltName=IP:127.0.0.1,DNS:localhost\n");
  await writeFile(file("client.ext"), "extendedKeyUsage=clientAuth\n");
  for (const [name, subject] of [
    ["server", "/CN=127.0.0.1"],
    ["client", "/CN=abridge test client"],
  ] as const) {
    openssl(["req", ...ec, "-keyout", file(`${name}.key`), "-out", file(`${name}.csr`), "-subj", subject]);
    openssl([
      "x509",
      "-req",
      "-in",
      file(`${name}.csr`),
      "-CA",
      file("ca.pem"),
      "-CAkey",
      file("ca.key"),
      "-CAcreateserial",
      "-out",
      file(`${name}.pem`),
      "-days",
      "2",
      "-extfile",
      file(`${name}.ext`),
    ]);
  }
  return { ca: file("ca.pem"), serverCert: file("server.pem"), serverKey: file("server.key"), clientCert: file("client.pem"), clientKey: file("client.key") };
}

/** A new user nkey: its public key (for the server's config) and a file holding its seed. */
export async function nkeyUser(dir: string, name: string): Promise<{ publicKey: string; seedFile: string }> {
  const user = nkeys.createUser();
  const seedFile = path.join(dir, `${name}.nk`);
  await writeFile(seedFile, `${new TextDecoder().decode(user.getSeed())}\n`, { mode: 0o600 });
  return { publicKey: user.getPublicKey(), seedFile };
}

type KeyPair = ReturnType<typeof nkeys.createUser>;

/** A JWT as nats-server reads it: signed with the issuer's nkey (ed25519). */
function jwt(issuer: KeyPair, claims: Record<string, unknown>): string {
  const encode = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString("base64url");
  const body: Record<string, unknown> = { ...claims, iat: Math.floor(Date.now() / 1000), iss: issuer.getPublicKey() };
  body.jti = createHash("sha256").update(JSON.stringify(body)).digest("base64url");
  const signed = `${encode({ typ: "JWT", alg: "ed25519-nkey" })}.${encode(body)}`;
  return `${signed}.${Buffer.from(issuer.sign(new TextEncoder().encode(signed))).toString("base64url")}`;
}

/** Subject permissions of a user JWT. */
export interface JwtPermissions {
  pub?: string[];
  sub?: string[];
  /** Allow one answer to the reply subject of each request received. */
  responses?: boolean;
}

/** An operator and one account: server config lines, and .creds files for users of the account. */
export interface Operator {
  /** The lines of a nats-server config trusting the operator and knowing the account. */
  config: string;
  /** Writes `<name>.creds` for a new user of the account with `permissions`. */
  creds(name: string, permissions?: JwtPermissions): Promise<string>;
  /** Writes `<name>.creds` for a user of an account the server does not know. */
  strangerCreds(name: string): Promise<string>;
}

const UNLIMITED_ACCOUNT = { subs: -1, data: -1, payload: -1, imports: -1, exports: -1, wildcards: true, conn: -1, leaf: -1 };

function credsText(userJwt: string, user: KeyPair): string {
  const seed = new TextDecoder().decode(user.getSeed());
  return [
    "-----BEGIN NATS USER JWT-----",
    userJwt,
    "------END NATS USER JWT------",
    "",
    "************************* IMPORTANT *************************",
    "NKEY Seed printed below can be used to sign and prove identity.",
    "NKEYs are sensitive and should be treated as secrets.",
    "",
    "-----BEGIN USER NKEY SEED-----",
    seed,
    "------END USER NKEY SEED------",
    "",
  ].join("\n");
}

/** An operator with one account, as `nsc` would set up, written for a memory resolver. */
export function operator(dir: string): Operator {
  const op = nkeys.createOperator();
  const account = nkeys.createAccount();
  const operatorJwt = jwt(op, { sub: op.getPublicKey(), name: "abridge-test", nats: { type: "operator", version: 2 } });
  const accountJwt = jwt(op, { sub: account.getPublicKey(), name: "agents", nats: { type: "account", version: 2, limits: UNLIMITED_ACCOUNT } });
  const userCreds = async (name: string, signer: KeyPair, permissions: JwtPermissions): Promise<string> => {
    const user = nkeys.createUser();
    const nats: Record<string, unknown> = { type: "user", version: 2, subs: -1, data: -1, payload: -1 };
    if (permissions.pub !== undefined) nats.pub = { allow: permissions.pub };
    if (permissions.sub !== undefined) nats.sub = { allow: permissions.sub };
    if (permissions.responses === true) nats.resp = { max: 1, ttl: 0 };
    const file = path.join(dir, `${name}.creds`);
    await writeFile(file, credsText(jwt(signer, { sub: user.getPublicKey(), name, nats }), user), { mode: 0o600 });
    return file;
  };
  return {
    config: [`operator: ${operatorJwt}`, "resolver: MEMORY", `resolver_preload: {`, `  ${account.getPublicKey()}: ${accountJwt}`, "}"].join("\n"),
    creds: (name, permissions = {}) => userCreds(name, account, permissions),
    strangerCreds: (name) => userCreds(name, nkeys.createAccount(), {}),
  };
}
