/**
 * boundedFetch, the bound on a message of the HTTP and SSE transports (httpResponseLimit.slow.test.ts
 * sends 300 MiB answers through a real serve process): an event or a JSON body over the bound is
 * replaced by an error answer to its request or dropped, and everything under it passes byte for byte.
 */
import { describe, expect, it } from "vitest";
import { boundedFetch, type DroppedMessage } from "../../src/upstream/mcp/boundedFetch.js";

describe("HTTP and SSE upstreams are bounded like stdio", () => {
  it("boundedFetch: events and bodies over the bound are replaced or dropped, the rest passes byte for byte", async () => {
    const dropped: DroppedMessage[] = [];
    const answer =
      (body: string, type: string): typeof fetch =>
      async () =>
        new Response(body, { headers: { "content-type": type } });
    const big = "y".repeat(200);
    // An event stream: a small event, an oversized answer (id last), an oversized notification, a small event.
    const stream = [
      'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{}}\n\n',
      `event: message\ndata: {"result":{"text":"${big}"},"jsonrpc":"2.0","id":7}\n\n`,
      `event: message\ndata: {"jsonrpc":"2.0","method":"notifications/message","params":{"data":"${big}"}}\n\n`,
      'event: message\ndata: {"jsonrpc":"2.0","id":8,"result":{}}\n\n',
    ].join("");
    const events = await (await boundedFetch(100, (d) => dropped.push(d), answer(stream, "text/event-stream"))("http://127.0.0.1/")).text();
    expect(events).toBe(
      [
        'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{}}\n\n',
        'event: message\ndata: {"jsonrpc":"2.0","id":7,"error":{"code":-32603,"message":"result over 100 bytes (251 bytes); dropped"}}\n\n',
        "event: message\n\n",
        'event: message\ndata: {"jsonrpc":"2.0","id":8,"result":{}}\n\n',
      ].join(""),
    );
    expect(dropped.map((d) => d.id)).toEqual([7, undefined]);

    // A JSON body: under the bound untouched; over it, an error answer to the POST's request.
    const post = { method: "POST", body: JSON.stringify({ jsonrpc: "2.0", id: 3, method: "tools/call", params: {} }) };
    const small = '{"result":{},"jsonrpc":"2.0","id":3}';
    expect(await (await boundedFetch(100, () => undefined, answer(small, "application/json"))("http://127.0.0.1/", post)).text()).toBe(small);
    const cut = await (
      await boundedFetch(100, () => undefined, answer(`{"result":{"text":"${big}"},"jsonrpc":"2.0","id":3}`, "application/json"))("http://127.0.0.1/", post)
    ).json();
    expect(cut).toMatchObject({ jsonrpc: "2.0", id: 3, error: { code: -32603, message: expect.stringContaining("result over 100 bytes") } });
  });
});
