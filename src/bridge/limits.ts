/**
 * How much of a user's file the bridge reads before it parses: a recipe YAML or a run log is user
 * input, so its size, its line count, its longest line and its key count are capped first, and a file over a cap is
 * refused with a message saying which cap and by how much — a 37 MB YAML with two million keys is
 * refused in milliseconds instead of parsing for minutes.
 *
 * The caps themselves are in src/core/limits.ts, with every other input's.
 *
 * Not here: the parsers themselves (recipe.ts, the log readers).
 */
import { FormatError } from '../core/errors';
import type { InputLimits } from '../core/limits';

export { LOG_LIMITS, RECIPE_LIMITS, type InputLimits } from '../core/limits';

const MIB = 1024 * 1024;
const size = (n: number) => (n >= MIB ? `${(n / MIB).toFixed(1)} MB` : `${Math.ceil(n / 1024)} kB`);

/** Counts lines, the longest line and key-like tokens (`word:`, `"…":` or `'…':`) in one pass, stopping once a cap is passed. */
function scan(text: string, limits: InputLimits): { lines: number; keys: number; longLine: number } {
  let lines = 1;
  let keys = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 10) {
      if (i - start > limits.lineChars) return { lines, keys, longLine: lines };
      start = i + 1;
      if (++lines > limits.lines) return { lines, keys, longLine: 0 };
    } else if (c === 58 /* : */ && i > 0) {
      const p = text.charCodeAt(i - 1);
      // a key ends right before ':' in YAML (`key:`, `'key':`) and JSON (`"key":`); times like 12:30 count too, which only errs on the safe side
      if (p === 34 || p === 39 || (p >= 48 && p <= 57) || (p >= 65 && p <= 90) || (p >= 97 && p <= 122) || p === 95) {
        if (++keys > limits.keys) return { lines, keys, longLine: 0 };
      }
    }
  }
  return { lines, keys, longLine: text.length - start > limits.lineChars ? lines : 0 };
}

/**
 * Throws a FormatError naming the cap when `text` is larger than `limits` allow for a `what`
 * ("recipe", "run log"); returns quietly otherwise.
 */
export function checkInputSize(text: string, limits: InputLimits, what: string): void {
  if (text.length > limits.chars) {
    throw new FormatError(`This ${what} is ${size(text.length)}; the playground reads at most ${size(limits.chars)} of it. Nothing was read.`);
  }
  const { lines, keys, longLine } = scan(text, limits);
  if (longLine > 0) throw new FormatError(`Line ${longLine.toLocaleString('en')} of this ${what} is longer than ${limits.lineChars.toLocaleString('en')} characters; the playground reads at most that many in one line. Nothing was read.`);
  if (lines > limits.lines) throw new FormatError(`This ${what} has more than ${limits.lines.toLocaleString('en')} lines; the playground reads at most that many. Nothing was read.`);
  if (keys > limits.keys) throw new FormatError(`This ${what} has more than ${limits.keys.toLocaleString('en')} keys; the playground reads at most that many. Nothing was read.`);
}

/**
 * Throws a FormatError naming the cap when a file of `bytes` bytes cannot hold text within
 * `limits` (UTF-8: at most 4 bytes a character) — checked before the file is read.
 */
export function checkFileBytes(bytes: number, limits: InputLimits, what: string): void {
  if (bytes > limits.chars * 4) throw new FormatError(`This ${what} is ${size(bytes)}; the playground reads at most ${size(limits.chars)} of it. Nothing was read.`);
}

/**
 * Throws a FormatError naming the cap when the UTF-8 `bytes` decode to more characters (UTF-16
 * units) than `limits.chars`: counted on the bytes (every byte that does not continue a sequence
 * is one unit, a four-byte sequence's lead one more), so a file between the two caps is refused
 * before a string of it is built.
 */
export function checkTextBytes(bytes: Uint8Array, limits: InputLimits, what: string): void {
  let units = 0;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    if ((b & 0xc0) !== 0x80) units += b >= 0xf0 ? 2 : 1;
  }
  if (units > limits.chars) throw new FormatError(`This ${what} holds ${units.toLocaleString('en')} characters; the playground reads at most ${limits.chars.toLocaleString('en')} of it. Nothing was read.`);
}
