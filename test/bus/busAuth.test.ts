/**
 * A bus that keeps agents apart: real nats-servers that require credentials (passwords from
 * examples/nats-permissions.conf with its subject permissions, nkeys over mutual TLS, a token,
 * .creds files of an operator's account), `abridge bus` workers logging in to them, and
 * BusClient and plain NATS peers with the right, another agent's and wrong credentials.
 */
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { BusCallError, BusClient } from "../../src/index.js";
import { fixtureServerToml, runAbridge, writeConfig } from "../helpers/cliHarness.js";
import { startNatsServer, type NatsServer } from "../helpers/natsServer.js";
import { BusRig, startWorker, type WorkerProcess } from "./busHarness.js";
import { nkeyUser, operator, tlsFiles } from "./natsAuth.js";
import { messageOf } from "../../src/model/errors.js";

const EXAMPLE = path.resolve(import.meta.dirname, "../../examples/nats-permissions.conf");
const PASSWORDS = {
  ALPHA_WORKER_PASSWORD: "alpha-worker-pw",
  ALPHA_HOST_PASSWORD: "alpha-host-pw",
  BETA_WORKER_PASSWORD: "beta-worker-pw",
  BETA_HOST_PASSWORD: "beta-host-pw",
};

let rig: BusRig;
let config: string;
const cleanups: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  rig = await BusRig.open("bus-auth");
  config = await writeConfig(
    rig.dir,
    ['mode = "full"', 'cache_dir = "cache"', fixtureServerToml("echo", "echoServer.ts", ["--marker", rig.marker, "--tools", "0"])].join("\n"),
  );
}, 60_000);

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});

afterAll(async () => rig?.close());

function text(result: { content?: unknown[] | undefined }): string {
  return (result.content as { text?: string }[]).map((c) => c.text ?? "").join("");
}

async function worker(nats: string, agent: string, args: string[] = []): Promise<WorkerProcess> {
  const started = await startWorker({ config, nats, agent, args });
  cleanups.push(() => started.stop());
  return started;
}

async function client(options: Parameters<typeof BusClient.connect>[0]): Promise<BusClient> {
  const connected = await BusClient.connect(options);
  cleanups.push(() => connected.close());
  return connected;
}

async function failure(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => undefined,
    (err: unknown) => err,
  );
}

describe("a bus with the permissions of examples/nats-permissions.conf", () => {
  let nats: NatsServer;
  let alpha: WorkerProcess;
  let host: BusClient;
  const url = (user: string, pass: string): string => `nats://${user}:${pass}@127.0.0.1:${nats.port}`;

  beforeAll(async () => {
    nats = await startNatsServer(["-c", EXAMPLE], { env: PASSWORDS });
    alpha = await startWorker({ config, nats: url("alpha-worker", PASSWORDS.ALPHA_WORKER_PASSWORD), agent: "alpha" });
    host = await BusClient.connect({ nats: url("alpha-host", PASSWORDS.ALPHA_HOST_PASSWORD), inboxPrefix: "_INBOX.alpha" });
  }, 90_000);

  afterAll(async () => {
    await host?.close();
    await alpha?.stop();
    await nats?.stop();
  });

  it("serves the agent's own host: calls and lists on the agent's subjects", async () => {
    expect(text(await host.callTool("alpha", "echo_echo", { text: "secret-arg sk-live-123" }))).toBe("secret-arg sk-live-123");
    expect((await host.listTools("alpha")).tools.map((t) => t.name)).toContain("echo_echo");
    expect(await host.listTools("alpha", { refresh: true })).toMatchObject({ agent: "alpha", worker: alpha.id, reason: "refresh" });
  });

  it("keeps a peer with another agent's credentials from reading the agent's calls and from answering them", async () => {
    const peers: { peer: NatsConnection; refused: string[] }[] = [];
    for (const [user, pass] of [
      ["beta-host", PASSWORDS.BETA_HOST_PASSWORD],
      ["beta-worker", PASSWORDS.BETA_WORKER_PASSWORD],
    ] as const) {
      const peer = await connect({ servers: `127.0.0.1:${nats.port}`, user, pass, inboxPrefix: "_INBOX.beta" });
      cleanups.push(() => peer.close());
      const refused: string[] = [];
      for (const subject of ["tool.invoke.mcp.alpha", "tool.invoke.mcp", "tool.invoke.mcp.>", "_INBOX.alpha.>", ">"]) {
        peer.subscribe(subject, { callback: (err) => void (err !== null && refused.push(`${subject}: ${err.message}`)) });
      }
      // A worker's way in: the agent's queue group.
      peer.subscribe("tool.invoke.mcp.alpha", { queue: "abridge-alpha", callback: (err) => void (err !== null && refused.push(`queue: ${err.message}`)) });
      peers.push({ peer, refused });
    }
    // The server has answered every subscription once a flush returns.
    for (const { peer } of peers) await peer.flush();
    for (const { refused } of peers) {
      expect(refused).toHaveLength(6);
      for (const line of refused) expect(line).toContain("Permissions Violation for Subscription");
    }

    // Nor can it answer on the agent's inboxes: the server refuses the publish and says so.
    const peer = peers[0]!.peer;
    const statuses = peer.status();
    const publishRefused = (async () => {
      for await (const status of statuses) if (status.type === "error" && String(status.error).includes("Publish to")) return String(status.error);
      return "the connection closed";
    })();
    peer.publish(
      "_INBOX.alpha.forged.1",
      JSON.stringify({ id: "x", agent: "alpha", worker: "forged", ok: true, result: { content: [{ type: "text", text: "forged" }] } }),
    );
    expect(await publishRefused).toContain('Permissions Violation for Publish to "_INBOX.alpha.forged.1"');

    // The agent's call meanwhile: the worker's answer, its arguments read by nobody else.
    expect(text(await host.callTool("alpha", "echo_echo", { text: "secret-arg sk-live-123" }))).toBe("secret-arg sk-live-123");

    // The other agent's host cannot send the agent a call either.
    const beta = await client({ nats: url("beta-host", PASSWORDS.BETA_HOST_PASSWORD), inboxPrefix: "_INBOX.beta" });
    const refused = await failure(beta.callTool("alpha", "echo_echo", { text: "x" }));
    expect(refused).toBeInstanceOf(BusCallError);
    expect(refused).toMatchObject({ busCode: "refused", retryable: false, origin: "client" });
    expect(messageOf(refused)).toContain("do not let this client send on tool.invoke.mcp.alpha");
  });

  it("tells a host whose inbox the permissions do not allow to set its inbox prefix", async () => {
    const plain = await client({ nats: url("alpha-host", PASSWORDS.ALPHA_HOST_PASSWORD) });
    const error = await failure(plain.callTool("alpha", "echo_echo", { text: "x" }));
    expect(error).toMatchObject({ busCode: "refused", retryable: false, origin: "client" });
    expect(messageOf(error)).toContain("receive answers on _INBOX.");
    expect(messageOf(error)).toContain("set an inbox prefix the permissions allow");
  });

  it("stops a worker started with another agent's credentials, saying which subjects it may not read", async () => {
    const error = await failure(startWorker({ config, nats: url("beta-worker", PASSWORDS.BETA_WORKER_PASSWORD), agent: "alpha" }));
    expect(String(error)).toContain("abridge bus exited with 1");
    expect(String(error)).toContain("does not let this worker subscribe to tool.invoke.mcp.alpha and tool.meta.mcp.refresh.alpha");
  });

  it("fails wrong credentials at once with a clear error, not retried, the password not shown", async () => {
    const error = await failure(BusClient.connect({ nats: url("alpha-host", "not-the-password") }));
    expect(error).toMatchObject({ code: "BUS_UNAVAILABLE", retryable: false });
    expect(messageOf(error)).toContain(
      `the NATS server at nats://127.0.0.1:${nats.port} refused the connection with the user and password given (Authorization Violation)`,
    );
    expect(messageOf(error)).not.toContain("not-the-password");

    const cli = await runAbridge(["bus", "--nats", url("alpha-worker", "not-the-password"), "--agent", "alpha", "--config", config]);
    expect(cli.code).toBe(1);
    expect(cli.stderr).toContain("refused the connection with the user and password given (Authorization Violation)");
    expect(cli.stderr).not.toContain("not-the-password");
  });
});

describe("nkeys, TLS, tokens and .creds files", () => {
  it("serves an nkey user over mutual TLS, and refuses a client that does not trust the server's CA", async () => {
    const dir = path.join(rig.dir, "tls");
    await mkdir(dir);
    const tls = await tlsFiles(dir);
    const workerKey = await nkeyUser(dir, "worker");
    const hostKey = await nkeyUser(dir, "host");
    const conf = path.join(dir, "nats.conf");
    await writeFile(
      conf,
      [
        `tls { cert_file: "${tls.serverCert}", key_file: "${tls.serverKey}", ca_file: "${tls.ca}", verify: true }`,
        `authorization { users: [ { nkey: ${workerKey.publicKey} }, { nkey: ${hostKey.publicKey} } ] }`,
      ].join("\n"),
    );
    const nats = await startNatsServer(["-c", conf]);
    cleanups.push(() => nats.stop());
    // The worker asks for TLS with its options, the client with the tls:// scheme too.
    await worker(nats.url, "secure", [
      "--nats-nkey",
      workerKey.seedFile,
      "--nats-tls-ca",
      tls.ca,
      "--nats-tls-cert",
      tls.clientCert,
      "--nats-tls-key",
      tls.clientKey,
    ]);
    const address = `tls://127.0.0.1:${nats.port}`;
    const bus = await client({ nats: address, nkeyFile: hostKey.seedFile, tls: { caFile: tls.ca, certFile: tls.clientCert, keyFile: tls.clientKey } });
    expect(text(await bus.callTool("secure", "echo_echo", { text: "over tls" }))).toBe("over tls");

    const untrusted = await failure(
      BusClient.connect({ nats: address, nkeyFile: hostKey.seedFile, tls: { certFile: tls.clientCert, keyFile: tls.clientKey } }),
    );
    expect(untrusted).toMatchObject({ code: "BUS_UNAVAILABLE" });
    expect(messageOf(untrusted)).toMatch(/certificate/i);
    const stranger = await nkeyUser(dir, "stranger");
    const unknown = await failure(
      BusClient.connect({ nats: address, nkeyFile: stranger.seedFile, tls: { caFile: tls.ca, certFile: tls.clientCert, keyFile: tls.clientKey } }),
    );
    expect(unknown).toMatchObject({ code: "BUS_UNAVAILABLE", retryable: false });
    expect(messageOf(unknown)).toContain("refused the connection with the nkey or creds given");
  });

  it("logs in with a token in the URL", async () => {
    const nats = await startNatsServer(["--auth", "token-123"]);
    cleanups.push(() => nats.stop());
    await worker(`nats://token-123@127.0.0.1:${nats.port}`, "tokened");
    const bus = await client({ nats: `nats://token-123@127.0.0.1:${nats.port}` });
    expect(text(await bus.callTool("tokened", "echo_echo", { text: "with a token" }))).toBe("with a token");
    const wrong = await failure(BusClient.connect({ nats: `nats://token-999@127.0.0.1:${nats.port}` }));
    expect(wrong).toMatchObject({ code: "BUS_UNAVAILABLE", retryable: false });
    expect(messageOf(wrong)).toContain("refused the connection with the token given");
  });

  it("logs in with .creds files of an operator's account, and refuses a user of an account the server does not know", async () => {
    const dir = path.join(rig.dir, "operator");
    await mkdir(dir);
    const op = operator(dir);
    const conf = path.join(dir, "nats.conf");
    await writeFile(conf, op.config);
    const nats = await startNatsServer(["-c", conf]);
    cleanups.push(() => nats.stop());
    const workerCreds = await op.creds("worker", {
      sub: ["tool.invoke.mcp.credited", "tool.meta.mcp.refresh.credited"],
      pub: ["tool.meta.mcp.credited", "tool.result.credited"],
      responses: true,
    });
    const hostCreds = await op.creds("host", { pub: ["tool.invoke.mcp.credited", "tool.meta.mcp.refresh.credited"], sub: ["_INBOX.credited.>"] });
    await worker(nats.url, "credited", ["--nats-creds", workerCreds]);
    const bus = await client({ nats: nats.url, credsFile: hostCreds, inboxPrefix: "_INBOX.credited" });
    expect(text(await bus.callTool("credited", "echo_echo", { text: "with creds" }))).toBe("with creds");
    const stranger = await failure(BusClient.connect({ nats: nats.url, credsFile: await op.strangerCreds("stranger") }));
    expect(stranger).toMatchObject({ code: "BUS_UNAVAILABLE", retryable: false });
    expect(messageOf(stranger)).toContain("refused the connection with the nkey or creds given");
  });

  it("refuses credentials it cannot use before connecting: two ways to log in, a missing file", async () => {
    const both = await runAbridge([
      "bus",
      "--nats",
      "nats://u:p@127.0.0.1:4222",
      "--nats-nkey",
      path.join(rig.dir, "none.nk"),
      "--agent",
      "alpha",
      "--config",
      config,
    ]);
    expect(both.code).toBe(2);
    expect(both.stderr).toContain("NATS credentials: give one way to log in, got a user and password in the URL and an nkey seed file");
    const missing = await runAbridge([
      "bus",
      "call",
      "--nats",
      "nats://127.0.0.1:4222",
      "--nats-creds",
      path.join(rig.dir, "none.creds"),
      "--agent",
      "alpha",
      "echo_echo",
    ]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain(`cannot read the NATS creds file ${path.join(rig.dir, "none.creds")}: ENOENT`);
  });
});
