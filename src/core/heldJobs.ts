import type { SummaryJobSink } from "../catalog/toolCatalog.js";
import type { SummarizeInput } from "../summarize/types.js";

/**
 * The catalog's way into the summary queue, which can hold jobs back for a while: while the
 * upstreams start, summarizing (and loading the tokenizer for the figures of each new entry) took
 * the CPU that the servers still starting and the first tools/list needed. Held jobs keep their
 * order and reach the queue on {@link release}; a job queued twice while held goes once, forced
 * if either asked for it.
 */
export class HeldJobs implements SummaryJobSink {
  private held: Map<string, { input: SummarizeInput; force: boolean }> | undefined;

  constructor(private readonly queue: SummaryJobSink) {}

  enqueue(input: SummarizeInput, options: { force?: boolean } = {}): void {
    if (this.held === undefined) {
      this.queue.enqueue(input, options);
      return;
    }
    const force = options.force === true || this.held.get(input.key)?.force === true;
    this.held.set(input.key, { input, force });
  }

  /** Jobs held count as summaries still to come, so the catalog announces their change once, after. */
  busy(): boolean {
    return (this.held !== undefined && this.held.size > 0) || this.queue.busy?.() === true;
  }

  /** Holds every job from now until {@link release}. */
  hold(): void {
    this.held ??= new Map();
  }

  /** Hands every held job to the queue, in the order held, and stops holding. Idempotent. */
  release(): void {
    const held = this.held;
    this.held = undefined;
    for (const { input, force } of held?.values() ?? []) this.queue.enqueue(input, force ? { force } : {});
  }
}
