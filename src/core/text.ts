/**
 * Text that came from a file, made safe to print on a terminal: control characters (C0, DEL, C1,
 * and the bidirectional overrides that reorder a line) are written as visible escapes, so a
 * config's name cannot set the window title, clear the screen or forge a log line. `escapeControl`
 * is the one escaping helper: every user-controlled string (a name or path from a file or a
 * folder, a file's own strings) goes through it where it enters a message or a printed line —
 * newlines included, so no string can start a line of its own; `escapeLines` is only the CLI
 * printer's last guard over whole messages, whose own newlines it keeps.
 *
 * `boundedMessage` keeps a message that quotes a file's values short.
 *
 * Not here: HTML escaping (React does it in the page), quoting for messages (safetensors.ts quote).
 */

// All of C0 (a file's string may not start a line of its own either), DEL, C1, bidi controls.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/** `s` with every control character shown as \n, \t, \r or \u{…}. */
export function escapeControl(s: string): string {
  return s.replace(CONTROL, (c) => (c === '\n' ? '\\n' : c === '\t' ? '\\t' : c === '\r' ? '\\r' : `\\u{${c.charCodeAt(0).toString(16)}}`));
}

/** A message of ours that may quote file strings: each line kept, control characters within lines escaped. */
export function escapeLines(s: string): string {
  return s.split('\n').map(escapeControl).join('\n');
}

/**
 * A message of bounded length: every quoted text over 60 characters cut to its first 60 and "…",
 * then the whole at `max` characters — so a value a file repeats thousands of times is not
 * repeated back whole.
 */
export function boundedMessage(message: string, max = 600): string {
  const short = message.replace(/"((?:[^"\\]|\\.){60})(?:[^"\\]|\\.)+"/g, (_m, head: string) => `"${head}…"`);
  return short.length <= max ? short : `${short.slice(0, max - 1)}…`;
}
