/**
 * Terminal control in text that came from elsewhere. An upstream's tool description, title or
 * error message is shown on the operator's terminal (`abridge tools`, summaries, errors); ESC and
 * the other control characters in it would let that upstream clear the screen, set the window
 * title, plant hyperlinks or rewrite lines already printed. Printing must show text, not obey it.
 */

/** ESC-introduced sequences: CSI (`ESC [ ... final`), OSC/DCS/APC/PM/SOS strings up to BEL or ST, and two-byte escapes. */
// eslint-disable-next-line no-control-regex
const ESCAPE_SEQUENCE =
  /\u001b(?:\[[\u0020-\u003f]*[\u0040-\u007e]?|[\]PX^_][^\u0007\u001b]*(?:\u0007|\u001b\\)?|[\u0020-\u002f]*[\u0030-\u007e]?)|\u009b[\u0020-\u003f]*[\u0040-\u007e]?|[\u009d\u0090\u0098\u009e\u009f][^\u0007\u001b\u009c]*(?:\u0007|\u001b\\|\u009c)?/g;

/** C0 controls but tab and line feed, DEL, and C1 controls. */
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

/** Same, with line feed too: for one-line text such as a summary. */
// eslint-disable-next-line no-control-regex
const CONTROL_OR_NEWLINE = /[\u0000-\u0008\u000a-\u001f\u007f-\u009f]/g;

/**
 * Removes escape sequences whole (so no `[2J` is left behind), then every other control
 * character but tab and line feed. `singleLine` turns tabs and line feeds into spaces as well.
 */
export function stripControl(text: string, options: { singleLine?: boolean } = {}): string {
  // A fast path: almost all text has no control character at all.
  if (!/[\u0000-\u0008\u000a-\u001f\u007f-\u009f]/.test(text)) return text;
  const withoutSequences = text.replace(ESCAPE_SEQUENCE, "");
  if (options.singleLine) return withoutSequences.replace(/\t/g, " ").replace(CONTROL_OR_NEWLINE, (c) => (c === "\n" ? " " : ""));
  return withoutSequences.replace(CONTROL, "");
}
