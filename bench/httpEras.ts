/**
 * Calls over `abridge serve --http` in the two eras, in one run against one serve process: a
 * session of the handshake era (initialize once, then every call names its `Mcp-Session-Id`) and
 * stateless calls of revision 2026-07-28 (no session: each call carries its version and
 * capabilities in `_meta` and the revision's headers). Both use the same SDK-free keep-alive
 * client (64 sockets), so the difference is the server's: per call, the session path looks the
 * session up, counts the call on it and goes through the session's SDK `Server`; the stateless
 * path checks the headers and `_meta` and calls the bridge. Upstream: the echo fixture.
 *
 * Per era: calls/s at c=64 (median of interleaved runs) and p50 of those calls, and serve's CPU
 * time per call. Writes bench/results/httpEras.{json,md}.
 *
 *   npx tsx bench/httpEras.ts
 */
import http from "node:http";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { configToml, ECHO_FIXTURE, stdioServerToml } from "./benchConfig.js";
import { startServe } from "./conformanceServe.js";
import { markdownTable } from "./markdownTable.js";
import { median, nowMs, percentile, processCpuMs, round } from "./measure.js";
import { connectRawHttp } from "./rawHttpClient.js";
import { runStandalone } from "./standalone.js";

const CONCURRENCY = 64;
const CALLS_PER_RUN = 4_000;
const RUNS = 3;
const WARM_UP = 1_000;
const ARGS = { text: "hello" };

/** Figures of one era. */
export interface HttpEraRow {
  era: "session (2025-11-25)" | "stateless (2026-07-28)";
  callsPerSecondC64: number;
  p50MsC64: number;
  p99MsC64: number;
  /** serve's CPU (user + system) per call over the measured runs, microseconds. */
  serveCpuUsPerCall: number | undefined;
}

/** Result of {@link runHttpEras}. */
export interface HttpErasResult {
  method: string;
  rows: HttpEraRow[];
  /** Stateless calls/s over session calls/s. */
  statelessSpeedup: number;
}

/** A stateless caller: one POST per call, no session, the revision's headers and `_meta`. */
function statelessCaller(url: string): { call(tool: string, args: object): Promise<void>; close(): void } {
  const target = new URL(url);
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  const meta = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": { name: "abridge-bench-stateless", version: "0.1.0" },
    "io.modelcontextprotocol/clientCapabilities": {},
  };
  let nextId = 1;
  return {
    call: (tool, args) =>
      new Promise((resolve, reject) => {
        const id = nextId++;
        const payload = JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params: { name: tool, arguments: args, _meta: meta } });
        const req = http.request(
          {
            agent,
            host: target.hostname,
            port: target.port,
            path: target.pathname,
            method: "POST",
            headers: {
              "content-type": "application/json",
              accept: "application/json, text/event-stream",
              "mcp-protocol-version": "2026-07-28",
              "mcp-method": "tools/call",
              "mcp-name": tool,
              "content-length": Buffer.byteLength(payload),
            },
          },
          (res) => {
            res.setEncoding("utf8");
            let body = "";
            res.on("data", (chunk: string) => (body += chunk));
            res.on("end", () => {
              if (res.statusCode !== 200 || !body.includes('"resultType":"complete"'))
                reject(new Error(`stateless call: HTTP ${res.statusCode}: ${body.slice(0, 200)}`));
              else resolve();
            });
            res.on("error", reject);
          },
        );
        req.on("error", reject);
        req.end(payload);
      }),
    close: () => agent.destroy(),
  };
}

/** `total` calls by {@link CONCURRENCY} callers: calls/s and each call's latency. */
async function atConcurrency(call: () => Promise<unknown>, total: number): Promise<{ rate: number; latencies: number[] }> {
  let started = 0;
  const latencies: number[] = [];
  const start = nowMs();
  const worker = async (): Promise<void> => {
    while (started < total) {
      started += 1;
      const t0 = nowMs();
      await call();
      latencies.push(nowMs() - t0);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  return { rate: total / ((nowMs() - start) / 1000), latencies };
}

/** Runs both eras against one `abridge serve --http` in front of the echo fixture. */
export async function runHttpEras(): Promise<HttpErasResult> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "abridge-bench-http-eras-"));
  const config = path.join(dir, "abridge.toml");
  await writeFile(config, configToml([stdioServerToml("echo", ECHO_FIXTURE)], "full"));
  const serve = await startServe(config, path.join(dir, "cache"), "full");
  const session = await connectRawHttp(serve.url);
  const stateless = statelessCaller(serve.url);
  try {
    const eras = [
      { era: "session (2025-11-25)" as const, call: () => session.call("echo_echo", ARGS) },
      { era: "stateless (2026-07-28)" as const, call: () => stateless.call("echo_echo", ARGS) },
    ];
    for (const { call } of eras) await atConcurrency(call, WARM_UP);
    const measured = eras.map(() => ({ rates: [] as number[], latencies: [] as number[], cpuMs: 0 }));
    // Interleaved, so that a change in the machine's load meanwhile weighs on both alike.
    for (let run = 0; run < RUNS; run++) {
      for (const [index, { call }] of eras.entries()) {
        const cpu0 = processCpuMs(serve.pid);
        const { rate, latencies } = await atConcurrency(call, CALLS_PER_RUN);
        const cpu1 = processCpuMs(serve.pid);
        const into = measured[index]!;
        into.rates.push(rate);
        into.latencies.push(...latencies);
        if (cpu0 !== undefined && cpu1 !== undefined) into.cpuMs += cpu1 - cpu0;
      }
    }
    const rows: HttpEraRow[] = eras.map(({ era }, index) => {
      const m = measured[index]!;
      return {
        era,
        callsPerSecondC64: Math.round(median(m.rates)),
        p50MsC64: round(percentile(m.latencies, 50), 2),
        p99MsC64: round(percentile(m.latencies, 99), 2),
        serveCpuUsPerCall: serve.pid === undefined ? undefined : round((m.cpuMs * 1000) / (RUNS * CALLS_PER_RUN), 1),
      };
    });
    return {
      method: `abridge serve --http (full mode) -> echo fixture over stdio; SDK-free keep-alive client, ${CONCURRENCY} sockets; ${WARM_UP} warm-up calls per era; calls/s = median of ${RUNS} interleaved runs of ${CALLS_PER_RUN} calls at c=${CONCURRENCY}; p50/p99 over those calls; serve CPU from /proc`,
      rows,
      statelessSpeedup: round(rows[1]!.callsPerSecondC64 / rows[0]!.callsPerSecondC64, 2),
    };
  } finally {
    stateless.close();
    await session.close();
    await serve.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

/** Markdown of a {@link HttpErasResult}. */
export function httpErasMarkdown(r: HttpErasResult): string {
  return [
    "### HTTP calls by era: session against stateless",
    "",
    markdownTable(
      ["era", `calls/s c=${CONCURRENCY}>`, `p50 ms c=${CONCURRENCY}>`, `p99 ms c=${CONCURRENCY}>`, "serve CPU us/call>"],
      r.rows.map((row) => [row.era, row.callsPerSecondC64, row.p50MsC64, row.p99MsC64, row.serveCpuUsPerCall]),
    ),
    "",
    `Stateless over session: ${r.statelessSpeedup}x calls/s. ${r.method}.`,
  ].join("\n");
}

await runStandalone(import.meta.url, { name: "httpEras", run: () => runHttpEras(), markdown: httpErasMarkdown });
