/**
 * What a stateless (2026-07-28) upstream does differently once it is up: `input_required`
 * results become sampling, elicitation and roots requests to the client behind the call (the
 * front end's ClientRelay, as for an upstream of the older revisions) and the call is sent again
 * with the answers; and the `ttlMs` of its tool list is when abridge lists it again.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { ClientRelay, JsonObject } from "../../src/model/types.js";
import { startStatelessHttp } from "../fixtures/statelessServer.js";
import { fixtureServer, serverConfig } from "../helpers/processes.js";
import { Watch } from "../helpers/waitFor.js";
import { makePool } from "./harness.js";

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

/** A client behind a call as a front end makes it: answers each kind of request, records what it was asked. */
function clientRelay(answers: Record<string, (params: JsonObject) => JsonObject>): ClientRelay & { asked: { method: string; params: JsonObject }[] } {
  const asked: { method: string; params: JsonObject }[] = [];
  return {
    client: "test-client",
    asked,
    async request(method, params) {
      asked.push({ method, params });
      const answer = answers[method];
      if (answer === undefined) throw new Error(`Client does not support ${method}`);
      return answer(params);
    },
    notify() {},
  };
}

const textOf = (result: { content?: unknown }): string => (result.content as { text: string }[]).map((c) => c.text).join("\n");

describe.each(["stdio", "http"] as const)("input_required of a stateless upstream over %s", (transport) => {
  async function pool(): Promise<ReturnType<typeof makePool>> {
    let server = fixtureServer("s", "statelessServer.ts", [], { protocol: "2026-07-28" });
    if (transport === "http") {
      const running = await startStatelessHttp();
      closers.push(() => running.close());
      server = serverConfig({ name: "s", transport: "http", url: running.url, protocol: "2026-07-28" });
    }
    const made = makePool({ servers: [server] });
    await made.start();
    expect(made.status("s")?.state).toBe("ready");
    return made;
  }

  it("elicitation, sampling and roots are asked of the calling client, and the call completes with the answers", async () => {
    const p = await pool();
    const relay = clientRelay({
      "elicitation/create": () => ({ action: "accept", content: { name: "Ada" } }),
      "sampling/createMessage": () => ({ role: "assistant", content: { type: "text", text: "forty-two" }, model: "m" }),
      "roots/list": () => ({ roots: [{ uri: "file:///work" }, { uri: "file:///home" }] }),
    });
    expect(textOf(await p.callTool("s", "ask", {}, { relay }))).toBe("hello Ada");
    expect(textOf(await p.callTool("s", "sample", { prompt: "the answer?" }, { relay }))).toBe("the model said: forty-two");
    expect(textOf(await p.callTool("s", "roots", {}, { relay }))).toBe("roots: file:///work, file:///home");
    expect(relay.asked.map((a) => a.method)).toEqual(["elicitation/create", "sampling/createMessage", "roots/list"]);
    expect(relay.asked[0]!.params).toMatchObject({ mode: "form", message: "What is your name?" });
    expect(relay.asked[1]!.params).toMatchObject({ messages: [{ role: "user", content: { type: "text", text: "the answer?" } }], maxTokens: 50 });
  });

  it("a server that asks again is answered round after round, its requestState sent back each time", async () => {
    const p = await pool();
    const names = ["Ada", "Lovelace"];
    const relay = clientRelay({ "elicitation/create": () => ({ action: "accept", content: { name: names.shift()! } }) });
    expect(textOf(await p.callTool("s", "ask_twice", {}, { relay }))).toBe("hello Ada Lovelace");
    expect(relay.asked.map((a) => a.params.message)).toEqual(["First name?", "Last name?"]);
  });

  it("a declined elicitation reaches the server as the client's answer", async () => {
    const p = await pool();
    const relay = clientRelay({ "elicitation/create": () => ({ action: "decline" }) });
    const result = await p.callTool("s", "ask", {}, { relay });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toBe("no name given (decline)");
  });

  it("no client behind the call (CLI, daemon): UPSTREAM_INPUT_REQUIRED naming what was asked, at once", async () => {
    const p = await pool();
    const error = await p.callTool("s", "ask", {}).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(error).toMatchObject({
      code: "UPSTREAM_INPUT_REQUIRED",
      message: expect.stringContaining("s: tools/call needs input from the user's client (elicitation/create)"),
    });
    // The server is fine: the next call goes through.
    expect(textOf(await p.callTool("s", "echo", { text: "still here" }))).toBe("still here");
  });

  it("a client that cannot answer (no sampling capability): UPSTREAM_INPUT_REQUIRED with the client's reason", async () => {
    const p = await pool();
    const relay = clientRelay({});
    await expect(p.callTool("s", "sample", {}, { relay })).rejects.toMatchObject({
      code: "UPSTREAM_INPUT_REQUIRED",
      message: expect.stringContaining(
        "needs sampling/createMessage from the user's client, which could not answer: Client does not support sampling/createMessage",
      ),
    });
  });
});

describe("the stateless HTTP headers", () => {
  it("a tool name that is not plain ASCII goes in Mcp-Name as base64, and the server finds it the same", async () => {
    const running = await startStatelessHttp();
    closers.push(() => running.close());
    const p = makePool({ servers: [serverConfig({ name: "s", transport: "http", url: running.url })] });
    await p.start();
    await p.callTool("s", "add_tool", { name: "grüße" });
    await p.refresh();
    expect(textOf(await p.callTool("s", "grüße", {}))).toBe("grüße ran");
    const sent = running.seenHeaders.at(-1)!;
    expect(sent["mcp-name"]).toBe(`=?base64?${Buffer.from("grüße").toString("base64")}?=`);
    expect(sent["mcp-session-id"]).toBeUndefined();
  });
});

describe("ttlMs of a stateless upstream's tool list", () => {
  it("is when the list is read again: a tool the server added appears without any notification", async () => {
    const p = makePool({ servers: [fixtureServer("s", "statelessServer.ts", ["--ttl-ms", "200"])] });
    const changed = new Watch();
    p.on("toolsChanged", () => changed.changed());
    await p.start();
    expect(p.tools().map((t) => t.name)).not.toContain("s_fresh");
    expect(textOf(await p.callTool("s", "add_tool", { name: "fresh" }))).toBe("added fresh");
    await changed.until(() => p.tools().some((t) => t.name === "s_fresh"), { what: "the re-list after ttlMs" });
    expect(textOf(await p.callTool("s", "fresh", {}))).toBe("fresh ran");
  });
});
