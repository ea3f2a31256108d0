import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { fixtureServerToml, pidsWithMarker, TEST_STARTUP_GRACE, writeConfig } from "../helpers/cliHarness.js";
import { serveOverHttp, type HttpServeProcess } from "../helpers/serveHarness.js";
import { REVISION, statelessMeta, statelessRequest } from "../helpers/statelessClient.js";
import { Watch } from "../helpers/waitFor.js";
import { useTempDir } from "../helpers/tempDir.js";

const ALL = { sampling: {}, elicitation: {}, roots: {} };

/** Opens `subscriptions/listen` and collects what it carries until `close` is called. */
async function listen(url: string, filter: Record<string, unknown>): Promise<{ frames: Record<string, unknown>[]; arrived: Watch; close(): void }> {
  const controller = new AbortController();
  const res = await fetch(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": REVISION,
      "mcp-method": "subscriptions/listen",
    },
    body: JSON.stringify({ jsonrpc: "2.0", id: "listen-1", method: "subscriptions/listen", params: { notifications: filter, _meta: statelessMeta() } }),
    signal: controller.signal,
  });
  expect(res.headers.get("content-type")).toContain("text/event-stream");
  const frames: Record<string, unknown>[] = [];
  const arrived = new Watch();
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  void (async () => {
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        buffer += value;
        let newline: number;
        while ((newline = buffer.indexOf("\n")) !== -1) {
          const line = buffer.slice(0, newline);
          buffer = buffer.slice(newline + 1);
          if (line.startsWith("data: ")) frames.push(JSON.parse(line.slice(6)) as Record<string, unknown>);
        }
        arrived.changed();
      }
    } catch {
      // Aborted by close().
    }
  })();
  return { frames, arrived, close: () => controller.abort() };
}

describe("abridge serve --http: input_required and subscriptions/listen for 2026-07-28 clients", () => {
  const temp = useTempDir();
  let serve: HttpServeProcess | undefined;
  let marker: string;
  beforeEach(async () => {
    marker = path.basename(temp.path);
    // The conformance fixture asks the client for input during some calls; the marker names its process.
    const config = await writeConfig(
      temp.path,
      [`cache_dir = "cache"`, 'mode = "full"', TEST_STARTUP_GRACE, fixtureServerToml("c", "conformanceServer.ts", [marker], "prefix = false")].join("\n"),
    );
    serve = await serveOverHttp(config);
  });
  afterEach(async () => {
    await serve?.stop();
    serve = undefined;
    expect(pidsWithMarker(marker)).toEqual([]);
  });

  it("turns an upstream's elicitation into input_required and resumes the same call with the answer", async () => {
    const { url } = serve!;
    const first = await statelessRequest(url, "tools/call", { name: "test_input_required_result_multi_round", arguments: {} }, { meta: statelessMeta(ALL) });
    expect(first.body.result).toMatchObject({ resultType: "input_required", inputRequests: { step1: { method: "elicitation/create" } } });
    // The key the upstream named is the key, and abridge's own meta key is not passed on.
    expect(JSON.stringify(first.body.result)).not.toContain("abridge/inputKey");
    const state1 = first.body.result!.requestState as string;

    const second = await statelessRequest(
      url,
      "tools/call",
      {
        name: "test_input_required_result_multi_round",
        arguments: {},
        requestState: state1,
        inputResponses: { step1: { action: "accept", content: { name: "Ada" } } },
      },
      { meta: statelessMeta(ALL) },
    );
    expect(second.body.result).toMatchObject({ resultType: "input_required", inputRequests: { step2: { method: "elicitation/create" } } });
    expect(second.body.result!.requestState).not.toBe(state1);

    // A state used once, or altered, names no call.
    const replay = await statelessRequest(
      url,
      "tools/call",
      {
        name: "test_input_required_result_multi_round",
        arguments: {},
        requestState: state1,
        inputResponses: { step1: { action: "accept", content: { name: "Eve" } } },
      },
      { meta: statelessMeta(ALL) },
    );
    expect([replay.status, replay.body.error?.code, replay.body.error?.data?.reason]).toEqual([400, -32602, "invalid_request_state"]);

    const third = await statelessRequest(
      url,
      "tools/call",
      {
        name: "test_input_required_result_multi_round",
        arguments: {},
        requestState: second.body.result!.requestState,
        inputResponses: { step2: { action: "accept", content: { color: "green" } } },
      },
      { meta: statelessMeta(ALL) },
    );
    expect(third.body.result).toMatchObject({ resultType: "complete", content: [{ type: "text", text: "Ada likes green" }] });
  });

  it("asks an older upstream's roots/list and a prompts/get elicitation as input_required, and resumes each", async () => {
    const { url } = serve!;
    const roots = await statelessRequest(url, "tools/call", { name: "test_input_required_result_list_roots", arguments: {} }, { meta: statelessMeta(ALL) });
    expect(roots.body.result).toMatchObject({ resultType: "input_required", inputRequests: { client_roots: { method: "roots/list" } } });
    const rootsDone = await statelessRequest(
      url,
      "tools/call",
      {
        name: "test_input_required_result_list_roots",
        arguments: {},
        requestState: roots.body.result!.requestState,
        inputResponses: { client_roots: { roots: [{ uri: "file:///work/project" }] } },
      },
      { meta: statelessMeta(ALL) },
    );
    expect(rootsDone.body.result).toMatchObject({ resultType: "complete", content: [{ type: "text", text: "Roots: file:///work/project" }] });

    const prompt = await statelessRequest(url, "prompts/get", { name: "test_input_required_result_prompt" }, { meta: statelessMeta(ALL) });
    expect(prompt.body.result).toMatchObject({ resultType: "input_required", inputRequests: { user_context: { method: "elicitation/create" } } });
    // The state is for the request it was given with: a tools/call of the same name cannot take it.
    const wrongMethod = await statelessRequest(
      url,
      "tools/call",
      { name: "test_input_required_result_prompt", arguments: {}, requestState: prompt.body.result!.requestState },
      { meta: statelessMeta(ALL) },
    );
    expect(wrongMethod.body.error).toMatchObject({ code: -32602, data: { reason: "invalid_request_state" } });
    const promptDone = await statelessRequest(
      url,
      "prompts/get",
      {
        name: "test_input_required_result_prompt",
        requestState: prompt.body.result!.requestState,
        inputResponses: { user_context: { action: "accept", content: { context: "the release notes" } } },
      },
      { meta: statelessMeta(ALL) },
    );
    expect(promptDone.body.result).toMatchObject({
      resultType: "complete",
      messages: [{ role: "user", content: { type: "text", text: "Use this context: the release notes" } }],
    });

    // A client without roots is not asked: the upstream's request is refused, and the call answered -32021.
    const noRoots = await statelessRequest(
      url,
      "tools/call",
      { name: "test_input_required_result_list_roots", arguments: {} },
      { meta: statelessMeta({ sampling: {} }) },
    );
    expect(noRoots.body.error).toMatchObject({ code: -32021, data: { requiredCapabilities: { roots: {} } } });
  });

  it("asks only for what the client declared, and answers -32021 (HTTP 400) when the call needs more", async () => {
    const { url } = serve!;
    const samplingOnly = await statelessRequest(
      url,
      "tools/call",
      { name: "test_input_required_result_capabilities", arguments: {} },
      { meta: statelessMeta({ sampling: {} }) },
    );
    expect(samplingOnly.body.result).toMatchObject({ resultType: "input_required", inputRequests: { greeting: { method: "sampling/createMessage" } } });
    expect(Object.keys(samplingOnly.body.result!.inputRequests as object)).toEqual(["greeting"]);

    const none = await statelessRequest(url, "tools/call", { name: "test_missing_capability", arguments: {} }, { meta: statelessMeta({}) });
    expect(none.status).toBe(400);
    expect(none.body.error).toMatchObject({ code: -32021, data: { requiredCapabilities: { sampling: {} } } });

    const invalid = await statelessRequest(
      url,
      "tools/call",
      { name: "test_input_required_result_elicitation", arguments: {}, inputResponses: { user_name: 12345 } },
      { meta: statelessMeta(ALL) },
    );
    expect([invalid.status, invalid.body.error?.code]).toEqual([400, -32602]);
  });

  it("sends log lines of a call only when the request named a logLevel, at or above it", async () => {
    const { url } = serve!;
    const quiet = await statelessRequest(url, "tools/call", { name: "test_logging_tool", arguments: {} });
    expect(quiet.events).toEqual([]);
    expect(quiet.body.result).toMatchObject({ resultType: "complete" });
    const loud = await statelessRequest(
      url,
      "tools/call",
      { name: "test_logging_tool", arguments: {} },
      { meta: statelessMeta({}, { "io.modelcontextprotocol/logLevel": "info" }) },
    );
    expect(loud.events.map((e) => e.method)).toEqual(["notifications/message", "notifications/message"]);
    expect(loud.body.result).toMatchObject({ resultType: "complete" });
    const above = await statelessRequest(
      url,
      "tools/call",
      { name: "test_logging_tool", arguments: {} },
      { meta: statelessMeta({}, { "io.modelcontextprotocol/logLevel": "error" }) },
    );
    expect(above.events).toEqual([]);
  });

  it("acknowledges subscriptions/listen first and carries the list changes it asked for, tagged with its id", async () => {
    const { url } = serve!;
    const tools = await listen(url, { toolsListChanged: true });
    const prompts = await listen(url, { promptsListChanged: true });
    try {
      await tools.arrived.until(() => tools.frames.length >= 1, { what: "the acknowledgement" });
      expect(tools.frames[0]).toMatchObject({
        method: "notifications/subscriptions/acknowledged",
        params: { notifications: { toolsListChanged: true }, _meta: { "io.modelcontextprotocol/subscriptionId": "listen-1" } },
      });
      await prompts.arrived.until(() => prompts.frames.length >= 1, { what: "the prompts stream's acknowledgement" });
      await statelessRequest(url, "tools/call", { name: "test_trigger_tool_change", arguments: {} });
      await tools.arrived.until(() => tools.frames.some((f) => f.method === "notifications/tools/list_changed"), {
        what: "tools/list_changed on the listen stream",
      });
      const change = tools.frames.find((f) => f.method === "notifications/tools/list_changed")!;
      expect(change.params).toEqual({ _meta: { "io.modelcontextprotocol/subscriptionId": "listen-1" } });
      // Barrier: a prompt change reaches the prompts stream after anything the tool change could have sent it.
      await statelessRequest(url, "tools/call", { name: "test_trigger_prompt_change", arguments: {} });
      await prompts.arrived.until(() => prompts.frames.some((f) => f.method === "notifications/prompts/list_changed"), { what: "prompts/list_changed" });
      expect(prompts.frames.map((f) => f.method)).not.toContain("notifications/tools/list_changed");
    } finally {
      tools.close();
      prompts.close();
    }
  });
});
