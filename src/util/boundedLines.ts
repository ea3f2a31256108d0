import type { Readable } from "node:stream";
import { BoundedLineReader } from "./boundedLineReader.js";

/** One line of a log-like stream: its text, or its first bytes when the line was cut. */
export interface BoundedLine {
  /** The line (without its newline), or its first 4 KiB when it was cut. */
  text: string;
  /** True when the line went over the bound: `text` is its beginning, the rest is skipped. */
  cut?: boolean;
}

/**
 * Reads `stream` line by line with each line bounded to `maxLineBytes`, for streams nobody
 * controls the shape of (an upstream's stderr). readline holds an unfinished line whole: a child
 * writing hundreds of MB without a newline grew one string until V8 refused it (`RangeError:
 * Invalid string length`) and the process died. Here a line is cut the moment it goes over the
 * bound: its first 4 KiB are handed on at once (a newline may never come) and the rest of it is
 * skipped, never held. A last line without a newline is handed on when the stream ends. Returns a
 * function that stops reading.
 */
export function forEachBoundedLine(stream: Readable, maxLineBytes: number, onLine: (line: BoundedLine) => void): () => void {
  const reader = new BoundedLineReader(maxLineBytes);
  let cutReported = false;
  const onData = (chunk: Buffer | string): void => {
    for (const event of reader.push(typeof chunk === "string" ? Buffer.from(chunk, "utf8") : chunk)) {
      if ("dropped" in event) {
        // Reported when it went over the bound (below), unless the whole line came in one chunk.
        if (!cutReported) onLine({ text: event.dropped.head, cut: true });
        cutReported = false;
      } else {
        onLine({ text: event.line });
      }
    }
    if (reader.overflowing && !cutReported) {
      cutReported = true;
      onLine({ text: reader.droppedHead, cut: true });
    }
  };
  const onEnd = (): void => {
    const last = reader.finish();
    if (last === undefined) return;
    if ("dropped" in last) {
      if (!cutReported) onLine({ text: last.dropped.head, cut: true });
    } else if (last.line !== "") {
      onLine({ text: last.line });
    }
  };
  stream.on("data", onData);
  stream.once("end", onEnd);
  return () => {
    stream.off("data", onData);
    stream.off("end", onEnd);
    reader.clear();
  };
}
