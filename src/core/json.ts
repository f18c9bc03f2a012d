/**
 * JSON from a file, read within bounds: its size is checked before a byte is decoded, its nesting
 * depth by one linear scan before it is parsed (a value nested 100,000 deep parses, but every
 * recursive walk over it — a message's preview, a library's constructor — overflows the stack),
 * and every failure is a FormatError that names the file and the bound.
 *
 * Not here: what the value must hold (each reader checks its own fields), the caps themselves
 * (limits.ts).
 */
import { FormatError } from './errors';
import { formatSize, MAX_JSON_DEPTH, MAX_SMALL_JSON_BYTES } from './limits';

export interface JsonBounds {
  /** Largest file accepted, in bytes. */
  readonly maxBytes: number;
  /** Deepest nesting of arrays and objects accepted. */
  readonly maxDepth: number;
  /** What the cap is, for the message ("config.json's cap", "1 KiB per token of vocab_size"). */
  readonly why?: string;
}

/**
 * The deepest nesting of `[`/`{` in JSON text `bytes` (UTF-8), or the byte offset where it first
 * passes `limit` (as `{ at }`). Brackets inside strings are skipped; invalid JSON is left to
 * JSON.parse to describe.
 */
export function jsonDepth(bytes: Uint8Array, limit: number): number | { at: number } {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < bytes.length; i++) {
    const c = bytes[i]!;
    if (inString) {
      if (c === 0x5c) i++; // backslash: skip the escaped byte
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > limit) return { at: i };
      if (depth > deepest) deepest = depth;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return deepest;
}

/** Parses a file's bytes as JSON within `bounds` (header); FormatError otherwise, whose message starts with `name` (the file, as the caller names it). */
export function readJson(name: string, bytes: Uint8Array, bounds: JsonBounds): unknown {
  if (bytes.length > bounds.maxBytes) {
    throw new FormatError(`${name} is ${formatSize(bytes.length)}, more than the ${formatSize(bounds.maxBytes)} this playground reads${bounds.why ? ` (${bounds.why})` : ''}; it is not the file it claims to be, or not for a model this size`);
  }
  const depth = jsonDepth(bytes, bounds.maxDepth);
  if (typeof depth === 'object') {
    throw new FormatError(`${name} nests arrays and objects more than ${bounds.maxDepth} deep (at byte ${depth.at}); no file of its kind is nested so deeply`);
  }
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new FormatError(`${name} is not UTF-8 text, so it is not JSON`);
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new FormatError(`${name} is not valid JSON (${e instanceof Error ? e.message.slice(0, 160) : String(e)})`);
  }
}

/**
 * A model folder's config.json `vocab_size` when it is a sensible positive integer (at most 2^24),
 * else undefined — what sizes the tokenizer's cap (limits.ts maxTokenizerBytes) before the
 * tokenizer is read; the loaders report a bad config.json by name.
 */
export function declaredVocab(bytes: Uint8Array | undefined): number | undefined {
  if (bytes === undefined) return undefined;
  try {
    const v = (readJson('config.json', bytes, { maxBytes: MAX_SMALL_JSON_BYTES, maxDepth: MAX_JSON_DEPTH }) as { vocab_size?: unknown } | null)?.vocab_size;
    return typeof v === 'number' && Number.isInteger(v) && v > 0 && v <= 2 ** 24 ? v : undefined;
  } catch {
    return undefined;
  }
}
