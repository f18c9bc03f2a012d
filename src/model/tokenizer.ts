/**
 * The character-level tokenizer of the playground's language models: 8 special tokens, then one
 * token per character of a fixed 56-character alphabet suited to arithmetic and small planning
 * tasks — 64 tokens in all.
 *
 *   id 0 <pad>   1 <bos>   2 <eos>   3 <sep>   4..7 <a0> <a1> <a2> <a3> (agent i's turn starts)
 *   id 8..63     ' ', '\n', 0-9, a-z, + - * / % = ( ) , . : ; > ? ! # _ |
 *
 * Special tokens have a spelling (`<bos>`, `<a2>`, …) so that text can carry them: `encode`
 * turns each spelling into its token, `decode` writes it back. '<' is deliberately *not* in the
 * alphabet, so a spelling can never be confused with plain characters and both round trips
 * (text → ids → text, ids → text → ids) are exact.
 *
 * Characters outside the alphabet are an error naming the character and its position (a string
 * index) — never silently dropped or mapped to an "unknown" token. Upper case is not in the
 * alphabet: lower-case task text first.
 *
 * `TextTokenizer` is what the language environment asks of any agent's tokenizer — this one or a
 * checkpoint's own (hfTokenizer.ts): a protocol context → ids, message ids → text, and the
 * end-of-message id.
 *
 * Not here: word-piece vocabularies (a Hugging Face tokenizer.json is read by hfTokenizer.ts
 * through @huggingface/tokenizers), normalisation (lower-casing, Unicode folding), or the prompt
 * formats of particular tasks (those belong to src/tasks).
 */
import { FormatError } from '../core/errors';

/** Token ids of the special tokens. */
export const PAD = 0;
export const BOS = 1;
export const EOS = 2;
export const SEP = 3;
/** `<a0>`..`<a3>`: the token that opens agent i's turn. */
export const AGENT_TOKENS: readonly number[] = [4, 5, 6, 7];
/** Most agents a turn marker exists for. */
export const MAX_AGENTS = AGENT_TOKENS.length;

/** Spellings of the special tokens, indexed by id. */
export const SPECIAL_TOKENS: readonly string[] = ['<pad>', '<bos>', '<eos>', '<sep>', '<a0>', '<a1>', '<a2>', '<a3>'];

/** The plain characters, in id order starting at SPECIAL_TOKENS.length. */
export const ALPHABET = ' \n0123456789abcdefghijklmnopqrstuvwxyz+-*/%=(),.:;>?!#_|';

/** A short description of the alphabet for error messages. */
const ALPHABET_DESCRIPTION = "space, newline, 0-9, a-z and + - * / % = ( ) , . : ; > ? ! # _ |";

export interface EncodeOptions {
  /** Put <bos> first. Default false. */
  readonly bos?: boolean;
  /** Put <eos> last. Default false. */
  readonly eos?: boolean;
}

export interface DecodeOptions {
  /** Drop special tokens instead of writing their spellings. Default false. */
  readonly skipSpecial?: boolean;
}

function describeChar(ch: string): string {
  const cp = ch.codePointAt(0) ?? 0;
  const hex = cp.toString(16).toUpperCase().padStart(4, '0');
  const shown = cp < 0x20 || cp === 0x7f ? JSON.stringify(ch) : `"${ch}"`;
  return `${shown} (U+${hex})`;
}

/**
 * What the language environment (src/sat/env/lm.ts) needs of an agent's tokenizer. A context is
 * protocol text with markers (<a_i>, <sep>; src/tasks/llm/protocols.ts); each tokenizer marks
 * turns its own way (the char tokenizer: one special token per marker).
 */
export interface TextTokenizer {
  /** Number of token ids (at most the model's vocab). */
  readonly vocabSize: number;
  /** The token that ends a message (the sampler stops there). */
  readonly eos: number;
  /** A protocol context → the ids the agent is prompted with (BOS included where the tokenizer adds one). */
  encodeContext(context: string): number[];
  /** The ids of a generated message (without the end token) → its text. */
  decodeMessage(ids: ArrayLike<number>): string;
}

/** The char-level tokenizer. Stateless; use the shared `tokenizer` instance. */
export class CharTokenizer implements TextTokenizer {
  /** End of message: <eos>. */
  readonly eos = EOS;
  /** Number of token ids (64). */
  readonly vocabSize: number;
  private readonly charToId = new Map<string, number>();
  private readonly idToString: string[];

  constructor() {
    this.idToString = [...SPECIAL_TOKENS];
    for (const ch of ALPHABET) {
      this.charToId.set(ch, this.idToString.length);
      this.idToString.push(ch);
    }
    this.vocabSize = this.idToString.length;
  }

  /**
   * `<bos>` + the context, each marker one special token. A context may show a teammate's message
   * written with another tokenizer (a loaded checkpoint's), which can hold any character: upper
   * case is lowered, and a character still outside the alphabet (or a '<' that starts no special
   * token) is dropped — so a mixed team never fails on its text. Contexts of char-tokenizer teams
   * never hold such characters, so for them this is exactly `encode(context, { bos: true })`.
   */
  encodeContext(context: string): number[] {
    let fit = '';
    for (let i = 0; i < context.length; ) {
      const special = context[i] === '<' ? SPECIAL_TOKENS.find((t) => context.startsWith(t, i)) : undefined;
      if (special !== undefined) {
        fit += special;
        i += special.length;
        continue;
      }
      const ch = String.fromCodePoint(context.codePointAt(i)!);
      const low = ch.toLowerCase();
      if (ch !== '<' && this.charToId.has(low)) fit += low;
      i += ch.length;
    }
    return this.encode(fit, { bos: true });
  }

  decodeMessage(ids: ArrayLike<number>): string {
    return this.decode(ids);
  }

  /** The token id of a single alphabet character, or undefined. */
  charId(ch: string): number | undefined {
    return this.charToId.get(ch);
  }

  /** The token that opens agent `agent`'s turn (`<a0>`..`<a3>`). */
  agentToken(agent: number): number {
    const id = AGENT_TOKENS[agent];
    if (!Number.isInteger(agent) || id === undefined) {
      throw new FormatError(`no turn marker for agent ${agent}: the tokenizer has markers for agents 0..${MAX_AGENTS - 1}`);
    }
    return id;
  }

  /** True for <pad>, <bos>, <eos>, <sep> and the turn markers. */
  isSpecial(id: number): boolean {
    return Number.isInteger(id) && id >= 0 && id < SPECIAL_TOKENS.length;
  }

  /** The spelling of one token id (a character, or a special token's spelling). */
  tokenString(id: number): string {
    const s = Number.isInteger(id) ? this.idToString[id] : undefined;
    if (s === undefined) {
      throw new FormatError(`cannot decode token id ${id}: ids run from 0 to ${this.vocabSize - 1}`);
    }
    return s;
  }

  /**
   * Text → token ids. Special-token spellings (`<bos>`, `<a1>`, …) become their tokens; every
   * other character must be in the alphabet. Throws FormatError naming the first character that
   * is not, with its position.
   */
  encode(text: string, opts: EncodeOptions = {}): number[] {
    const ids: number[] = [];
    if (opts.bos) ids.push(BOS);
    let i = 0;
    while (i < text.length) {
      const ch = text[i]!;
      if (ch === '<') {
        const special = SPECIAL_TOKENS.findIndex((s) => text.startsWith(s, i));
        if (special < 0) {
          const end = text.indexOf('>', i);
          const got = end < 0 ? text.slice(i, i + 6) : text.slice(i, Math.min(end + 1, i + 12));
          throw new FormatError(
            `cannot encode "${got}" at position ${i}: "<" only starts a special token (${SPECIAL_TOKENS.join(' ')}); ` +
              `"<" is not in the alphabet (${ALPHABET_DESCRIPTION})`,
          );
        }
        ids.push(special);
        i += SPECIAL_TOKENS[special]!.length;
        continue;
      }
      const id = this.charToId.get(ch);
      if (id === undefined) {
        const cp = text.codePointAt(i) ?? 0;
        const full = String.fromCodePoint(cp);
        const hint = full !== full.toLowerCase() && this.charToId.has(full.toLowerCase()) ? '; lower-case the text first' : '';
        throw new FormatError(
          `cannot encode character ${describeChar(full)} at position ${i}: it is not in the tokenizer's alphabet (${ALPHABET_DESCRIPTION})${hint}`,
        );
      }
      ids.push(id);
      i++;
    }
    if (opts.eos) ids.push(EOS);
    return ids;
  }

  /**
   * Token ids → text. Special tokens are written as their spellings unless `skipSpecial`.
   * Throws FormatError naming the first id that is not a token, with its position.
   */
  decode(ids: ArrayLike<number>, opts: DecodeOptions = {}): string {
    let out = '';
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i]!;
      const s = Number.isInteger(id) ? this.idToString[id] : undefined;
      if (s === undefined) {
        throw new FormatError(`cannot decode token id ${id} at position ${i}: ids run from 0 to ${this.vocabSize - 1}`);
      }
      if (opts.skipSpecial && id < SPECIAL_TOKENS.length) continue;
      out += s;
    }
    return out;
  }
}

/** The shared tokenizer instance. */
export const tokenizer = new CharTokenizer();

/** Number of token ids of the char-level tokenizer (64). */
export const vocabSize = tokenizer.vocabSize;
