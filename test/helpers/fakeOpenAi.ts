import http from "node:http";
import type { AddressInfo } from "node:net";

/**
 * What the fake endpoint does with one `POST /v1/chat/completions`. Behaviours are consumed in
 * order; when the script is empty the default (initially `ok`) applies.
 */
export type FakeBehaviour =
  /** A good JSON reply computed from the request's tools, optionally after a delay. */
  | { kind: "ok"; delayMs?: number }
  /** 429 with `retry-after` (seconds or HTTP date) and/or `retry-after-ms`. */
  | { kind: "rateLimit"; retryAfter?: string; retryAfterMs?: string }
  /** An error status with an OpenAI-style error body (500, 400, 503...). */
  | { kind: "status"; status: number }
  /** Never answers; the request stays open until the client gives up or the server closes. */
  | { kind: "hang" }
  /** A completion whose message content is prose, not JSON. */
  | { kind: "notJson" }
  /** A good reply in which every tool gets a parameter the schema does not have. */
  | { kind: "invent"; param?: string }
  /** A good reply that leaves out the last `count` tools (default 1). */
  | { kind: "omit"; count?: number }
  /** A completion with exactly this message content. */
  | { kind: "content"; content: string };

/** One request the fake received. */
export interface RecordedRequest {
  /** `Date.now()` when it arrived. */
  receivedAt: number;
  method: string;
  path: string;
  authorization: string | undefined;
  /** The parsed JSON body. */
  body: Record<string, unknown>;
  /** The server named in the user message (abridge's request format). */
  server: string;
  /** Tool names in the user message, in order. */
  tools: string[];
  /** The behaviour applied. */
  behaviour: FakeBehaviour["kind"];
}

/** A running fake OpenAI-compatible endpoint. */
export interface FakeOpenAi {
  /** Base URL to give the client, ending in `/v1`. */
  baseUrl: string;
  requests: RecordedRequest[];
  /** Largest number of requests open at the same time so far. */
  readonly maxInFlight: number;
  /** Appends behaviours to the script. */
  script(...behaviours: FakeBehaviour[]): void;
  /** The behaviour used when the script is empty. */
  setDefault(behaviour: FakeBehaviour): void;
  /** Stops the server, cutting open connections (hanging requests included). */
  close(): Promise<void>;
}

interface ToolView {
  name: string;
  description?: string;
  input?: Record<string, { required?: boolean; description?: string }>;
}

/** A plausible, guard-passing summary: strictly fewer words than the original description. */
function shortSummary(tool: ToolView): string {
  const words = (tool.description ?? "").split(/\s+/).filter((w) => w.length > 0);
  if (words.length === 0) return `Runs ${tool.name.replace(/[_-]+/g, " ")}`;
  const kept = words.slice(0, Math.max(1, Math.min(6, words.length - 1)));
  return kept.join(" ").replace(/[.,;:]+$/, "");
}

function goodReply(tools: ToolView[]): { tools: Array<{ name: string; summary: string; params: Record<string, string> }> } {
  return {
    tools: tools.map((tool) => {
      const params: Record<string, string> = {};
      for (const [name, view] of Object.entries(tool.input ?? {})) {
        if (view.description) params[name] = view.description.split(/\s+/).slice(0, 4).join(" ");
      }
      return { name: tool.name, summary: shortSummary(tool), params };
    }),
  };
}

function completion(content: string, model: unknown): Record<string, unknown> {
  return {
    id: "chatcmpl-fake",
    object: "chat.completion",
    created: Math.floor(Date.now() / 1000),
    model: typeof model === "string" ? model : "fake",
    choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop" }],
    usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
  };
}

/** Starts a fake OpenAI-compatible endpoint on 127.0.0.1 with a random port. */
export async function startFakeOpenAi(): Promise<FakeOpenAi> {
  const requests: RecordedRequest[] = [];
  const queue: FakeBehaviour[] = [];
  let fallback: FakeBehaviour = { kind: "ok" };
  let inFlight = 0;
  let maxInFlight = 0;
  const timers = new Set<NodeJS.Timeout>();

  const server = http.createServer((req, res) => {
    inFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    let finished = false;
    const finish = (): void => {
      if (!finished) {
        finished = true;
        inFlight--;
      }
    };
    res.on("close", finish);

    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const send = (status: number, body: unknown, headers: Record<string, string> = {}): void => {
        if (res.destroyed) return;
        const text = typeof body === "string" ? body : JSON.stringify(body);
        res.writeHead(status, { "content-type": "application/json", ...headers });
        res.end(text);
      };
      if (req.method !== "POST" || req.url !== "/v1/chat/completions") {
        send(404, { error: { message: `no route ${req.method} ${req.url}`, type: "invalid_request_error" } });
        return;
      }
      let body: Record<string, unknown> = {};
      try {
        body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as Record<string, unknown>;
      } catch {
        send(400, { error: { message: "body is not JSON", type: "invalid_request_error" } });
        return;
      }
      const messages = Array.isArray(body["messages"]) ? (body["messages"] as Array<{ content?: unknown }>) : [];
      let user: { server?: string; tools?: ToolView[] } = {};
      try {
        const last = messages[messages.length - 1]?.content;
        user = typeof last === "string" ? (JSON.parse(last) as typeof user) : {};
      } catch {
        user = {};
      }
      const tools = Array.isArray(user.tools) ? user.tools : [];
      const behaviour = queue.shift() ?? fallback;
      requests.push({
        receivedAt: Date.now(),
        method: req.method,
        path: req.url,
        authorization: req.headers.authorization,
        body,
        server: user.server ?? "",
        tools: tools.map((t) => t.name),
        behaviour: behaviour.kind,
      });

      switch (behaviour.kind) {
        case "ok": {
          const reply = (): void => send(200, completion(JSON.stringify(goodReply(tools)), body["model"]));
          if (behaviour.delayMs) {
            const timer = setTimeout(() => {
              timers.delete(timer);
              reply();
            }, behaviour.delayMs);
            timers.add(timer);
          } else {
            reply();
          }
          return;
        }
        case "rateLimit": {
          const headers: Record<string, string> = {};
          if (behaviour.retryAfter !== undefined) headers["retry-after"] = behaviour.retryAfter;
          if (behaviour.retryAfterMs !== undefined) headers["retry-after-ms"] = behaviour.retryAfterMs;
          send(429, { error: { message: "Rate limit reached", type: "rate_limit_exceeded" } }, headers);
          return;
        }
        case "status":
          send(behaviour.status, { error: { message: `scripted ${behaviour.status}`, type: "server_error" } });
          return;
        case "hang":
          return;
        case "notJson":
          send(200, completion("Sure! Here are the summaries you asked for.", body["model"]));
          return;
        case "invent": {
          const reply = goodReply(tools);
          for (const tool of reply.tools) tool.params[behaviour.param ?? "invented_option"] = "made up";
          send(200, completion(JSON.stringify(reply), body["model"]));
          return;
        }
        case "omit": {
          const reply = goodReply(tools);
          reply.tools = reply.tools.slice(0, Math.max(0, reply.tools.length - (behaviour.count ?? 1)));
          send(200, completion(JSON.stringify(reply), body["model"]));
          return;
        }
        case "content":
          send(200, completion(behaviour.content, body["model"]));
          return;
      }
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;

  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    get maxInFlight() {
      return maxInFlight;
    },
    script: (...behaviours) => {
      queue.push(...behaviours);
    },
    setDefault: (behaviour) => {
      fallback = behaviour;
    },
    close: async () => {
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
