/**
 * A checkpoint's own tokenizer: tokenizer.json read by @huggingface/tokenizers (the same models,
 * normalizers, pre-tokenizers and decoders as the Python library) and the chat template of
 * tokenizer_config.json rendered by @huggingface/jinja. It satisfies `TextTokenizer`
 * (tokenizer.ts), so the language environment encodes a task's contexts with the agent's own
 * tokenizer; `HfTurns` says how our turn markers become text.
 *
 * A message ends at `eos`: tokenizer_config.json's eos_token, else generation_config.json's
 * eos_token_id, else config.json's (the first of a list); a tokenizer with none, or with an eos id
 * outside the vocabulary, is refused. tokenizer.json is checked before the library reads it
 * (tokenizerJson.ts), and the chat template renders within budgets (chatTemplate.ts).
 *
 * Not here: the char tokenizer (tokenizer.ts), model weights (hfLoad.ts).
 */
import { Tokenizer } from '@huggingface/tokenizers';
import { FormatError } from '../core/errors';
import { TOKENIZER_MAX_ENCODE_CHARS } from '../core/limits';
import { ChatTemplate, TemplateBudgetError } from './chatTemplate';
import type { HfInfo } from './hfConfig';
import type { TextTokenizer } from './tokenizer';
import { checkTokenizerJson } from './tokenizerJson';

/**
 * How turns are marked. Our protocols write contexts with markers (src/tasks/llm/protocols.ts):
 * prompt + ( <a_i> message <sep> )* + <a_j>, which a Hugging Face vocabulary lacks, so:
 *   'plain'  the markers become text: prompt + ("\nagent i: " message)* + "\nagent j:", encoded
 *            with the tokenizer's special tokens (BOS where the checkpoint adds it, as
 *            `tokenizer(text)` does in Python);
 *   'chat'   (default when tokenizer_config.json has a chat_template) one user message holding the
 *            prompt and the earlier messages as "agent i: message" lines, rendered with
 *            add_generation_prompt and encoded without added special tokens, as
 *            `apply_chat_template(tokenize=True)` does (the template writes BOS itself).
 */
export type HfTurns = 'plain' | 'chat';

export interface HfTokenizerOptions {
  readonly tokenizerConfig?: unknown;
  readonly generationConfig?: unknown;
  /** bos/eos ids of config.json. */
  readonly info?: Pick<HfInfo, 'bosTokenId' | 'eosTokenId'>;
  /** The model's vocabulary size: every token id must be below it. */
  readonly vocab?: number;
  readonly turns?: HfTurns;
}

const MARKER = /<a(\d)>|<sep>|<bos>|<eos>/g;

function obj(v: unknown): Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}

/** A special token as tokenizer_config.json writes it: a string or { content }. */
function tokenText(v: unknown): string | undefined {
  if (typeof v === 'string') return v;
  const c = obj(v).content;
  return typeof c === 'string' ? c : undefined;
}

function pickTemplate(v: unknown): string | undefined {
  if (typeof v === 'string') return v;
  if (Array.isArray(v)) {
    const entries = v.map(obj);
    const t = (entries.find((e) => e.name === 'default') ?? entries[0])?.template;
    return typeof t === 'string' ? t : undefined;
  }
  return undefined;
}

/** The first id of an id or a list of them; undefined when absent; a FormatError naming `where` when it is not an id. */
function firstId(v: unknown, where: string): number | undefined {
  const x = Array.isArray(v) ? v[0] : v;
  if (x === undefined || x === null) return undefined;
  if (typeof x !== 'number' || !Number.isInteger(x) || x < 0) throw new FormatError(`${where} = ${JSON.stringify(x)?.slice(0, 40)} is not a token id (an integer ≥ 0)`);
  return x;
}

export class HfTokenizer implements TextTokenizer {
  readonly vocabSize: number;
  readonly eos: number;
  readonly turns: HfTurns;
  readonly bosToken: string | undefined;
  readonly eosToken: string;
  private readonly tk: Tokenizer;
  private readonly template: ChatTemplate | null;

  constructor(tokenizerJson: unknown, opts: HfTokenizerOptions = {}) {
    const tj = obj(tokenizerJson);
    checkTokenizerJson(tj, opts.vocab);
    const tc = obj(opts.tokenizerConfig);
    try {
      this.tk = new Tokenizer(tj, tc);
    } catch (e) {
      throw new FormatError(`tokenizer.json: @huggingface/tokenizers cannot read it (${e instanceof Error ? e.message : String(e)})`);
    }
    const vocab = this.tk.get_vocab(true);
    let maxId = -1;
    for (const id of vocab.values()) maxId = Math.max(maxId, id);
    this.vocabSize = maxId + 1;
    if (opts.vocab !== undefined && this.vocabSize > opts.vocab) {
      throw new FormatError(`tokenizer.json: has token ids up to ${maxId}, but config.json "vocab_size" = ${opts.vocab}; the tokenizer does not belong to this model`);
    }
    const eosText = tokenText(tc.eos_token);
    const eos =
      (eosText !== undefined ? this.tk.token_to_id(eosText) : undefined) ??
      firstId(obj(opts.generationConfig).eos_token_id, 'generation_config.json: "eos_token_id"') ??
      (opts.info?.eosTokenId ?? undefined);
    if (eos === undefined) {
      throw new FormatError('tokenizer: no end-of-sequence token (tokenizer_config.json "eos_token", generation_config.json or config.json "eos_token_id"); a message could never end');
    }
    if (eos >= this.vocabSize && (opts.vocab === undefined || eos >= opts.vocab)) {
      throw new FormatError(`tokenizer: the end-of-sequence token id ${eos} is not in the vocabulary (ids 0..${Math.max(this.vocabSize, opts.vocab ?? 0) - 1}); a message could never end`);
    }
    this.eos = eos;
    this.eosToken = this.tk.id_to_token(eos) ?? eosText ?? '';
    const bos = tokenText(tc.bos_token) ?? (opts.info?.bosTokenId != null ? this.tk.id_to_token(opts.info.bosTokenId) : undefined);
    this.bosToken = bos;
    const source = pickTemplate(tc.chat_template);
    const turns = opts.turns ?? (source !== undefined ? 'chat' : 'plain');
    if (turns === 'chat' && source === undefined) throw new FormatError('tokenizer_config.json: has no "chat_template", so turns cannot be marked with one; use plain turns');
    this.turns = turns;
    this.template = null;
    if (turns === 'chat') {
      try {
        this.template = new ChatTemplate(source!);
      } catch (e) {
        throw new FormatError(`tokenizer_config.json: "chat_template" does not parse (${e instanceof Error ? e.message : String(e)})`);
      }
      this.renderChat('probe'); // a template that fails, fails at load
    }
  }

  /**
   * Text → ids with the tokenizer's own added special tokens (`tokenizer(text)` in Python) unless
   * `special` is false. A text longer than TOKENIZER_MAX_ENCODE_CHARS is refused before the
   * tokenizer's patterns run on it (their cost may grow with the square of its length).
   */
  encode(text: string, special = true): number[] {
    if (text.length > TOKENIZER_MAX_ENCODE_CHARS) {
      throw new FormatError(`tokenizer: a text of ${text.length} characters is longer than the ${TOKENIZER_MAX_ENCODE_CHARS} this playground encodes in one call (a seat's context is at most 1,024 tokens; a checked pre-tokenizer pattern may still take time growing with the square of the length, docs/models.md "Input limits")`);
    }
    return this.tk.encode(text, { add_special_tokens: special }).ids;
  }

  /** Ids → text; special tokens dropped unless `keepSpecial`. No ids (a message that ended at once) → ''. */
  decode(ids: ArrayLike<number>, keepSpecial = false): string {
    if (ids.length === 0) return ''; // the library refuses an empty list
    return this.tk.decode(Array.from(ids), { skip_special_tokens: !keepSpecial });
  }

  private renderChat(content: string): string {
    try {
      return this.template!.render({
        messages: [{ role: 'user', content }],
        add_generation_prompt: true,
        bos_token: this.bosToken ?? '',
        eos_token: this.eosToken,
      });
    } catch (e) {
      if (e instanceof TemplateBudgetError) throw new FormatError(`tokenizer_config.json: "chat_template" is stopped: ${e.message}, past what rendering one chat may take (docs/models.md, "Input limits")`);
      throw new FormatError(`tokenizer_config.json: "chat_template" fails to render (${e instanceof Error ? e.message : String(e)})`);
    }
  }

  /** A protocol context (markers and all) as the text this tokenizer encodes (header: plain or chat). */
  renderContext(context: string): string {
    if (this.turns === 'plain') {
      return context.replace(MARKER, (m, agent: string | undefined) => (agent !== undefined ? `\nagent ${agent}:` : ''));
    }
    // chat: drop the final marker (the assistant turn is the agent's), earlier markers become lines.
    const body = context.replace(/<a\d>$/, '').replace(MARKER, (m, agent: string | undefined) => (agent !== undefined ? `\nagent ${agent}: ` : ''));
    return this.renderChat(body);
  }

  encodeContext(context: string): number[] {
    const text = this.renderContext(context);
    return this.turns === 'plain' ? this.encode(text, true) : this.encode(text, false);
  }

  decodeMessage(ids: ArrayLike<number>): string {
    return this.decode(ids);
  }
}
