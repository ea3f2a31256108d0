import { autoChoice, tokenReport, type AutoChoice, type ModeTokens } from "../catalog/renderTools.js";
import type { ListedTool, Mode } from "../catalog/types.js";
import type { Config } from "../config/schema.js";
import type { Logger } from "../log/logger.js";
import { assignNames } from "../model/names.js";
import type { AdmittedExposedTool } from "../catalog/types.js";
import { parseRecordedList } from "../upstream/recorded/recordedList.js";
import { openSummaryPipeline } from "./summaryPipeline.js";
import { sharedCacheOptions } from "./sharedCache.js";

/** Options of {@link renderRecorded}. */
export interface RenderRecordedOptions {
  /** A recorded `tools/list` answer (see `abridge record`), a `tools/list` result or a bare tools array. */
  text: string;
  /** Where `text` came from, for errors (`<stdin>`, a file name). */
  source: string;
  /**
   * The server the tools belong to, given the name the recording carries (if any): throws when
   * there is none to give (`render` names its `--server` option).
   */
  server: (recorded: string | undefined) => string;
  /** Separator, `[summary]`, compact schema and pins apply as a bridge applies them. */
  config: Config;
  mode: Mode;
  /** Token budget of `mode = "auto"` (in place of the config's `token_budget`). */
  tokenBudget: number;
  /** Path of `summaries.jsonl`: hits are read from it and new summaries written to it. */
  cacheFile: string;
  env: Record<string, string | undefined>;
  logger?: Logger;
  signal?: AbortSignal;
  /** What to measure besides the list: `auto`'s choice (mode auto only) and every mode's tokens. */
  measure?: { auto?: boolean; tokens?: boolean };
}

/** What {@link renderRecorded} returns. */
export interface RenderedList {
  server: string;
  /** The `tools/list` result's tools, as a client receives them in `mode`. */
  listed: ListedTool[];
  /** `mode = "auto"` with `measure.auto`: the view it chose, the tools listed beside lazy, its tokens. */
  auto?: Omit<AutoChoice, "listed">;
  /** With `measure.tokens`: o200k counts of every mode's list. */
  tokens?: Record<Mode, ModeTokens>;
}

/**
 * A recorded tool list as a client of the bridge would receive it in `mode`: named as discovery
 * names tools, summarized through the cache (misses are summarized and written before the list is
 * rendered), with the call counts a bridge on this cache has kept (auto lists the most called
 * first). What `abridge render` prints, for bridges that take abridge as a rendering layer.
 *
 * @throws AbridgeError INPUT_INVALID when `text` is not a tool list (naming `source` and the tool).
 */
export async function renderRecorded(options: RenderRecordedOptions): Promise<RenderedList> {
  const recorded = parseRecordedList(options.text, options.source);
  const server = options.server(recorded.server);
  const names = assignNames(
    recorded.tools.map((t) => ({ server, tool: t.name, prefix: true })),
    options.config.separator,
  );
  const byTool = new Map(names.map((n) => [n.tool, n]));
  const exposed: AdmittedExposedTool[] = recorded.tools.map((tool) => {
    const assigned = byTool.get(tool.name)!;
    return { server, tool, name: assigned.name, uri: assigned.uri };
  });
  const config = options.config;
  const pipeline = await openSummaryPipeline({
    cacheFile: options.cacheFile,
    // A fleet's shared cache serves `render` as it serves the bridges.
    ...sharedCacheOptions({ config, env: options.env }),
    summary: config.summary,
    env: options.env,
    ...(options.logger !== undefined ? { logger: options.logger } : {}),
    separator: config.separator,
    compactSchema: config.compact_schema,
    auto: { tokenBudget: options.tokenBudget, pins: config.pin },
  });
  const { catalog, queue } = pipeline;
  try {
    catalog.setTools(exposed);
    await queue.drain(options.signal);
    const out: RenderedList = { server, listed: catalog.list(options.mode) };
    if (options.mode === "auto" && options.measure?.auto) {
      const { listed: _listed, ...choice } = autoChoice(catalog.tools(), catalog.renderOptions());
      out.auto = choice;
    }
    if (options.measure?.tokens) out.tokens = tokenReport(catalog.tools(), catalog.renderOptions());
    return out;
  } finally {
    await pipeline.close();
  }
}
