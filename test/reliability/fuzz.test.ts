/**
 * Fuzzing the parsers where outside data enters: config files, cache lines, daemon lines and
 * requests. Random and mutated inputs must never crash, hang or produce an unclear error: each
 * parser returns its value or its own clear failure. Seeded, so a failure reproduces.
 */
import { once } from "node:events";
import { createServer, connect } from "node:net";
import type { AddressInfo, Server, Socket } from "node:net";
import fc from "fast-check";
import { stringify as tomlStringify } from "smol-toml";
import { afterEach, describe, expect, it } from "vitest";
import { parseCacheLine } from "../../src/cache/parseCacheLine.js";
import { parseConfigText } from "../../src/config/parseConfigText.js";
import { DaemonSession } from "../../src/daemon/server/daemonSession.js";
import type { SessionHost } from "../../src/daemon/server/daemonSession.js";
import { LineSplitter } from "../../src/util/lineSplitter.js";
import { daemonRequestSchema, requestIdOf } from "../../src/daemon/wire/protocol.js";
import { AbridgeError } from "../../src/model/errors.js";
import { silentLogger } from "../../src/log/logger.js";
import { lineOf, makeEntry } from "../helpers/cacheEntries.js";
import { Watch } from "../helpers/waitFor.js";
import { isObject } from "../../src/model/json.js";

const SEED = 20261121;
const RUNS = 300;

const VALID_TOML = `mode = "compact"
[summary]
summarizer = "extractive"
[servers.github]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-github"]
env = { TOKEN = "\${GITHUB_TOKEN}" }
deny = ["delete_*"]
read_only = true
[servers.docs]
url = "https://example.com/mcp"
headers = { Authorization = "Bearer x" }
`;
const VALID_JSON = JSON.stringify({ mcpServers: { fs: { command: "npx", args: ["-y", "x"], env: { A: "b" } }, web: { url: "http://127.0.0.1:1/mcp" } } });

/** A string with a few random edits: deletions, insertions, swaps, truncation. */
function mutated(base: string): fc.Arbitrary<string> {
  const edit = fc.tuple(fc.nat({ max: base.length }), fc.nat({ max: 8 }), fc.string({ maxLength: 6, unit: "binary" }));
  return fc.array(edit, { minLength: 1, maxLength: 6 }).map((edits) => {
    let text = base;
    for (const [at, remove, insert] of edits) {
      const pos = Math.min(at, text.length);
      text = text.slice(0, pos) + insert + text.slice(pos + remove);
    }
    return text;
  });
}

/** Parses config text; returns "ok" or the error, and fails the property on anything unclear. */
function parseConfigOutcome(text: string, file: string): "ok" | AbridgeError {
  try {
    parseConfigText(text, { file, env: { GITHUB_TOKEN: "t0ken-value" } });
    return "ok";
  } catch (err) {
    expect(err).toBeInstanceOf(AbridgeError);
    const error = err as AbridgeError;
    expect(error.code).toBe("CONFIG_INVALID");
    expect(error.message.length).toBeGreaterThan(0);
    // Every problem line names the file.
    for (const line of error.message.split("\n")) expect(line.startsWith(file)).toBe(true);
    expect(error.message).not.toContain("t0ken-value");
    return error;
  }
}

describe("fuzz: config parser", () => {
  it("random text, as TOML and as JSON", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 300, unit: "binary" }), (text) => {
        parseConfigOutcome(text, "fuzz.toml");
        parseConfigOutcome(text, "fuzz.json");
      }),
      { seed: SEED, numRuns: RUNS },
    );
  });

  it("mutated valid TOML and mcp.json", () => {
    expect(parseConfigOutcome(VALID_TOML, "abridge.toml")).toBe("ok");
    expect(parseConfigOutcome(VALID_JSON, "mcp.json")).toBe("ok");
    fc.assert(
      fc.property(mutated(VALID_TOML), (text) => void parseConfigOutcome(text, "abridge.toml")),
      { seed: SEED, numRuns: RUNS },
    );
    fc.assert(
      fc.property(mutated(VALID_JSON), (text) => void parseConfigOutcome(text, "mcp.json")),
      { seed: SEED, numRuns: RUNS },
    );
  });

  it("structurally random documents (random values under the real keys)", () => {
    const value = fc.oneof(fc.string({ maxLength: 20 }), fc.integer(), fc.boolean(), fc.array(fc.string({ maxLength: 8 }), { maxLength: 3 }), fc.constant({}));
    const server = fc.dictionary(
      fc.constantFrom(
        "command",
        "url",
        "args",
        "env",
        "headers",
        "allow",
        "deny",
        "timeout_ms",
        "read_only",
        "destructive",
        "sandbox",
        "lifecycle",
        "spill",
        "max_output_bytes",
        "type",
        "bogus",
      ),
      value,
    );
    const doc = fc.record(
      {
        mode: value,
        separator: value,
        audit_log: value,
        servers: fc.dictionary(fc.string({ minLength: 1, maxLength: 10 }), server, { maxKeys: 3 }),
      },
      { requiredKeys: [] },
    );
    fc.assert(
      fc.property(doc, (d) => {
        parseConfigOutcome(JSON.stringify(d), "fuzz.json");
        parseConfigOutcome(JSON.stringify({ mcpServers: d.servers }), "mcp.json");
        let toml: string | undefined;
        try {
          toml = tomlStringify(d);
        } catch {
          // Not every random object has a TOML form (e.g. a key TOML cannot express).
        }
        if (toml !== undefined) parseConfigOutcome(toml, "fuzz.toml");
      }),
      { seed: SEED, numRuns: RUNS },
    );
  });
});

describe("fuzz: cache lines", () => {
  it("never throws; a rejected line always says why", () => {
    const valid = lineOf(makeEntry("github", "create_issue")).trimEnd();
    expect(parseCacheLine(valid).ok).toBe(true);
    const check = (line: string): void => {
      const result = parseCacheLine(line);
      if (!result.ok) expect(result.reason.length).toBeGreaterThan(0);
      else expect(result.entry.key).toBe(`${result.entry.server}:${result.entry.tool}:${result.entry.hash}`);
    };
    fc.assert(fc.property(fc.string({ maxLength: 400, unit: "binary" }), check), { seed: SEED, numRuns: RUNS });
    fc.assert(fc.property(mutated(valid), check), { seed: SEED, numRuns: RUNS * 2 });
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 3 }), (v) => check(JSON.stringify(v))),
      { seed: SEED, numRuns: RUNS },
    );
    // Valid entries with random field values.
    const entry = fc.record({
      server: fc.string({ maxLength: 12 }),
      tool: fc.string({ maxLength: 12 }),
      summary: fc.string({ maxLength: 50 }),
      tokensAfter: fc.oneof(fc.integer(), fc.double()),
    });
    fc.assert(
      fc.property(entry, (e) => check(JSON.stringify({ ...makeEntry("s", "t"), ...e, key: `${e.server}:${e.tool}:${makeEntry("s", "t").hash}` }))),
      { seed: SEED, numRuns: RUNS },
    );
  });
});

describe("fuzz: daemon framing and requests", () => {
  it("LineSplitter: any chunking yields the same lines; an over-long line is a clear error", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 600 }), fc.array(fc.nat({ max: 600 }), { maxLength: 8 }), (bytes, cuts) => {
        const buffer = Buffer.from(bytes);
        const splitter = new LineSplitter(64);
        const points = [...new Set(cuts.map((c) => Math.min(c, buffer.length)))].sort((a, b) => a - b);
        const lines: string[] = [];
        let error: AbridgeError | undefined;
        let from = 0;
        for (const to of [...points, buffer.length]) {
          const out = splitter.push(buffer.subarray(from, to));
          lines.push(...out.lines);
          error ??= out.error;
          from = to;
        }
        const expected: string[] = [];
        const parts = buffer.toString("latin1").split("\n");
        parts.pop();
        let tooLong = false;
        for (const part of parts) {
          if (part.length > 64) {
            tooLong = true;
            break;
          }
          const text = Buffer.from(part, "latin1").toString("utf8");
          expected.push(text.endsWith("\r") ? text.slice(0, -1) : text);
        }
        if (tooLong) {
          expect(error?.code).toBe("DAEMON_BAD_REQUEST");
          expect(lines).toEqual(expected);
        } else {
          expect(lines).toEqual(expected);
          if (error) expect(error.message).toMatch(/line longer than 64 bytes/);
        }
      }),
      { seed: SEED, numRuns: RUNS },
    );
  });

  it("request schema and id extraction never throw", () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 3 }), (value) => {
        requestIdOf(value);
        const parsed = daemonRequestSchema.safeParse(value);
        if (!parsed.success) expect(parsed.error.issues.length).toBeGreaterThan(0);
      }),
      { seed: SEED, numRuns: RUNS },
    );
  });

  describe("a live session over a real socket", () => {
    const closers: (() => Promise<void>)[] = [];
    afterEach(async () => {
      await Promise.all(closers.splice(0).map((c) => c()));
    });

    it("answers every JSON line, in order, with ok or a coded error, and keeps serving", async () => {
      const host: SessionHost = {
        token: "fuzz-token",
        maxLineBytes: 4096,
        logger: silentLogger,
        execute: async (request) => ({ body: { result: { echoed: request.op } } }),
        begin: () => {},
        end: () => {},
        count: () => {},
      };
      let session: DaemonSession | undefined;
      const server: Server = createServer((socket) => {
        session = new DaemonSession(socket, host, 1);
      });
      server.listen(0, "127.0.0.1");
      await once(server, "listening");
      const client: Socket = connect((server.address() as AddressInfo).port, "127.0.0.1");
      await once(client, "connect");
      closers.push(async () => {
        client.destroy();
        await session?.close(100);
        await new Promise((resolve) => server.close(resolve));
      });
      const ops = fc.constantFrom("list_tools", "call_tool", "get_schema", "stats", "refresh", "nope", 7);
      const request = fc.record(
        {
          op: ops,
          token: fc.constant("fuzz-token"),
          server: fc.string({ maxLength: 5 }),
          tool: fc.string({ maxLength: 5 }),
          args: fc.jsonValue({ maxDepth: 2 }),
          extra: fc.string({ maxLength: 5 }),
        },
        { requiredKeys: ["op", "token"] },
      );
      // Every tenth line a well-formed request, so answers are checked to interleave in order.
      // Every line carries the token: a refused one ends the connection (tested at the end).
      const values = fc
        .sample(
          fc.oneof(
            request,
            fc.jsonValue({ maxDepth: 2 }).map((value) => ({ value, token: "fuzz-token" })),
          ),
          { seed: SEED, numRuns: 200 },
        )
        .map((v, i) => (i % 10 === 0 ? { op: "stats", token: "fuzz-token" } : v));
      let received = "";
      const reading = new Watch();
      client.on("data", (b: Buffer) => {
        received += b.toString("utf8");
        reading.changed();
      });
      for (const [i, value] of values.entries()) {
        const withId = isObject(value) ? { ...value, id: i } : value;
        client.write(`${JSON.stringify(withId)}\n`);
      }
      const answered = (): number => received.split("\n").length - 1;
      await reading.until(() => answered() >= values.length, { what: `${values.length} answers`, timeoutMs: 20_000, detail: () => `${answered()} came` });
      const answers = received
        .trimEnd()
        .split("\n")
        .map((l) => JSON.parse(l) as { ok: boolean; id?: number; error?: { code: string } });
      expect(answers).toHaveLength(values.length);
      for (const [i, answer] of answers.entries()) {
        const value = values[i];
        if (isObject(value)) expect(answer.id).toBe(i);
        if (!answer.ok) expect(["DAEMON_UNAUTHORIZED", "DAEMON_BAD_REQUEST"]).toContain(answer.error?.code);
      }
      for (let i = 0; i < answers.length; i += 10) expect(answers[i]).toEqual({ id: i, ok: true, result: { echoed: "stats" } });
      // A wrong token: one coded error, then the connection is closed.
      const refused = connect((server.address() as AddressInfo).port, "127.0.0.1");
      closers.push(async () => void refused.destroy());
      await once(refused, "connect");
      let refusedText = "";
      refused.on("data", (b: Buffer) => (refusedText += b.toString("utf8")));
      refused.write(`${JSON.stringify({ op: "stats", token: "wrong" })}\n${JSON.stringify({ op: "stats", token: "fuzz-token" })}\n`);
      await once(refused, "close");
      expect(
        refusedText
          .trimEnd()
          .split("\n")
          .map((l) => (JSON.parse(l) as { error?: { code: string } }).error?.code),
      ).toEqual(["DAEMON_UNAUTHORIZED"]);
      // Then garbage: the connection gets one coded error and is closed; the server keeps serving.
      client.write("{not json\n");
      await once(client, "close");
      expect(received.trimEnd().split("\n").pop()).toContain("DAEMON_BAD_REQUEST");
      const again = connect((server.address() as AddressInfo).port, "127.0.0.1");
      closers.push(async () => void again.destroy());
      await once(again, "connect");
      again.write(`${JSON.stringify({ op: "stats", token: "fuzz-token" })}\n`);
      const [chunk] = (await once(again, "data")) as [Buffer];
      expect(JSON.parse(chunk.toString("utf8"))).toEqual({ ok: true, result: { echoed: "stats" } });
    });
  });
});
