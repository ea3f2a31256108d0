/**
 * What the `server/discover` probe of `protocol = "auto"` costs at an upstream's start, and what a
 * call costs in each revision: in-process HTTP fixtures (test/fixtures/: the 1.x SDK's handshake
 * server with sessions, the stateless one, the dual one), so that no process start-up hides the
 * difference. Per server and `protocol`, run in alternation: the median and p90 time from
 * `start()` to ready (probe, initialize if any, tools/list) over the runs, and the median of about
 * 200 sequential `add` calls spread over them.
 *
 *   npx tsx bench/protocolProbe.ts [--runs 30]
 *
 * Prints a markdown table and writes bench/results/protocol-probe.json and .md.
 */
import type { ServerConfig } from "../src/config/schema.js";
import { exposesTool } from "../src/policy/allowDeny.js";
import { UpstreamPool } from "../src/upstream/upstreamPool.js";
import { startDualEraHttp } from "../test/fixtures/dualEraServer.js";
import { startLegacyHttp } from "../test/fixtures/legacyServer.js";
import { startStatelessHttp } from "../test/fixtures/statelessServer.js";
import { serverConfig } from "../test/helpers/processes.js";
import { markdownTable } from "./markdownTable.js";
import { median, nowMs, round } from "./measure.js";
import { runStandalone } from "./standalone.js";

type Protocol = NonNullable<ServerConfig["protocol"]>;

const CALLS = 200;

const CASES: { server: string; start: () => Promise<{ url: string; close(): Promise<void> }>; protocols: Protocol[] }[] = [
  { server: "handshake (1.x SDK, sessions)", start: () => startLegacyHttp(), protocols: ["legacy", "auto"] },
  { server: "stateless (2026-07-28 only)", start: () => startStatelessHttp(), protocols: ["2026-07-28", "auto"] },
  { server: "dual", start: () => startDualEraHttp(), protocols: ["legacy", "2026-07-28", "auto"] },
];

/** The p-th percentile (0-100) of `values`. */
function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;
}

interface Row {
  server: string;
  protocol: Protocol;
  spoken: string;
  startMedianMs: number;
  startP90Ms: number;
  callMedianMs: number;
}

/** What one probe measured: per server and protocol, start to ready and a call. */
interface ProtocolProbeResult {
  runs: number;
  calls: number;
  rows: Row[];
}

/** Starts each server's upstream `runs` times per protocol, in alternation, with calls after each start. */
async function runProtocolProbe(runs: number): Promise<ProtocolProbeResult> {
  const rows: Row[] = [];
  for (const c of CASES) {
    const running = await c.start();
    try {
      const starts = new Map<Protocol, number[]>(c.protocols.map((p) => [p, []]));
      const calls = new Map<Protocol, number[]>(c.protocols.map((p) => [p, []]));
      const spoken = new Map<Protocol, string>();
      // The protocols in alternation, run after run, so that a loaded moment weighs on each alike.
      for (let run = 0; run < runs; run++) {
        for (const protocol of c.protocols) {
          const pool = new UpstreamPool({
            separator: "_",
            exposes: exposesTool,
            retryFailedStart: false,
            servers: [serverConfig({ name: "s", transport: "http", url: running.url, protocol })],
          });
          const t0 = nowMs();
          await pool.start();
          starts.get(protocol)!.push(nowMs() - t0);
          if (pool.status("s")?.state !== "ready") throw new Error(`${c.server}, protocol = ${protocol}: ${JSON.stringify(pool.status("s")?.error)}`);
          if (run === 0) {
            const who = await pool.callTool("s", "whoami", {});
            const text = (who.content as { text?: string }[])[0]?.text ?? "{}";
            spoken.set(protocol, String((JSON.parse(text) as { era?: string }).era));
          }
          // A few calls per start, the first left out (it pays for the connection).
          for (let i = 0; i <= CALLS / runs; i++) {
            const t = nowMs();
            await pool.callTool("s", "add", { a: i, b: 1 });
            if (i > 0) calls.get(protocol)!.push(nowMs() - t);
          }
          await pool.close();
        }
      }
      for (const protocol of c.protocols) {
        const s = starts.get(protocol)!;
        rows.push({
          server: c.server,
          protocol,
          spoken: spoken.get(protocol) ?? "?",
          startMedianMs: round(median(s)),
          startP90Ms: round(percentile(s, 90)),
          callMedianMs: round(median(calls.get(protocol)!), 3),
        });
      }
    } finally {
      await running.close();
    }
  }
  return { runs, calls: CALLS, rows };
}

function protocolProbeTable(r: ProtocolProbeResult): string {
  return markdownTable(
    ["server", "protocol", "spoken", "start to ready, median ms", "p90 ms", "call (add), median ms"],
    r.rows.map((row) => [row.server, row.protocol, row.spoken, row.startMedianMs, row.startP90Ms, row.callMedianMs]),
  );
}

await runStandalone(import.meta.url, {
  name: "protocol-probe",
  run: (argv) => {
    const runsFlag = argv.indexOf("--runs");
    return runProtocolProbe(runsFlag === -1 ? 30 : Math.max(1, Number(argv[runsFlag + 1])));
  },
  markdown: protocolProbeTable,
  json: (r, date) => ({ startedAt: date, ...r }),
  markdownFile: (table, r) => `# server/discover probe and calls per revision (HTTP, in process, ${r.runs} starts each)\n\n${table}\n`,
});
