/**
 * Share links: an experiment's settings in the URL hash, `#v1.<base64url(deflate-raw(JSON))>`,
 * the JSON one flat object with keys sorted at every level, so a state has exactly one link:
 *
 *   {"lr":0.3,"lr_hide":true,"preset":"climbing","seed":4,"step":{"agent":1,"stage":3}}
 *
 * `preset` is the base (absent: the defaults), a setting's key overrides it with a typed value,
 * `<key>_hide: true` hides a control or a panel (panels.ts), `step` is a StepRef to replay to, and
 * `checkpoints` (language tasks) names the seats' own checkpoints by folder hash (payloads.ts),
 * `projector: true` opens the page in projector mode (projector.ts), and `question` is a
 * teacher's own question shown above the preset's (the lesson-link builder writes it).
 * The seed is a setting, so opening a link replays the same run.
 *
 * `decodeShare` never throws and never hangs: sizes are capped before and while inflating, and
 * every failure is `{ ok: false, code, error }` saying what was wrong and that the defaults opened.
 *
 * Not here: `location.hash`, applying the state or replaying the run (the page does those).
 */
import { deflateSync } from 'fflate';
import * as v from 'valibot';
import { ConfigError, FormatError } from '../core/errors';
import { CONFIG_KEYS, type Config, type ConfigKey, coerceValue, defaultConfig, diffConfig, isConfigKey, isLlmTask, parseConfig, SettingTypeError, unknownSetting } from '../sat/config';
import { PRESETS, presetConfig } from '../sat/presets';
import { inflateCapped } from './inflate';
import { PANEL_NAMES } from './panels';
import { checkpointRule, failedField, SEAT_CHECKPOINT_KEYS, seatCheckpointSchema, type SeatCheckpoint, stepRefSchema } from './payloads';
import type { StepRef } from './stepRef';

/** The link format's version: the `1` of `#v1.`. A link of another version opens the defaults. */
export const SHARE_VERSION = 1;
/** What every share hash starts with. */
export const SHARE_PREFIX = `#v${SHARE_VERSION}.`;
/**
 * Longest hash (prefix included) that `decodeShare` reads and `encodeShare` writes, in characters.
 * A full config with every control hidden needs about a third of it; URLs of 4 KiB survive every
 * browser, chat client and mail program we care about.
 */
export const MAX_SHARE_HASH_CHARS = 4096;
/**
 * Largest inflated JSON, in bytes. Inflating stops as soon as it is passed, so a link that
 * decompresses to megabytes (a zip bomb) is refused after reading 16 KiB of output.
 */
export const MAX_SHARE_JSON_BYTES = 16 * 1024;
/** Longest string (key or value) in a link, in characters: longer than any key, enum option or preset name. */
export const MAX_SHARE_STRING = 64;
/** Longest teacher's question a link holds, in characters (two lines of the question box). */
export const MAX_SHARE_QUESTION = 240;
/** Controls that are not config keys but may still be hidden with `<name>_hide`: the gallery and the page's panels (panels.ts). */
export const HIDEABLE_EXTRA = ['preset', ...PANEL_NAMES] as const;

export interface ShareState {
  /** A preset name (PRESETS); absent = the config's defaults are the base. */
  readonly preset?: string;
  /** Raw values of the config keys that differ from the preset (or defaults): key → typed value. */
  readonly config: Readonly<Partial<Record<ConfigKey, unknown>>>;
  readonly step?: StepRef;
  /** Keys whose control is hidden: config keys, or "preset". */
  readonly hide: readonly string[];
  /** Seats on a checkpoint of their own, by agent (language tasks). */
  readonly checkpoints?: readonly ShareCheckpoint[];
  /** Open in projector mode (absent: the viewer's own choice). */
  readonly projector?: true;
  /** A teacher's own question, shown above the preset's (absent: none). */
  readonly question?: string;
}

/** A seat's checkpoint as a link records it (payloads.ts): which agent, the folder's hash and name, and how it is stored (absent: q8). */
export type ShareCheckpoint = SeatCheckpoint;

/** A link's checkpoint entry: the file's fields, and no others. */
const linkCheckpointSchema = v.strictObject(seatCheckpointSchema.entries);

/** x as a link writes it: {agent, hash, name} and quant unless it is the default q8. */
function linkCheckpoint(x: ShareCheckpoint): ShareCheckpoint {
  return { agent: x.agent, hash: x.hash, name: x.name, ...(x.quant !== undefined && x.quant !== 'q8' ? { quant: x.quant } : {}), ...(x.onnx ? { onnx: { file: x.onnx.file, mode: x.onnx.mode } } : {}) };
}

/** What went wrong with a link, one code per class of failure (the UI may, e.g., stay silent on 'empty'). */
export type ShareErrorCode =
  | 'empty'
  | 'prefix'
  | 'version'
  | 'too-long'
  | 'base64'
  | 'deflate'
  | 'too-large'
  | 'utf8'
  | 'json'
  | 'not-object'
  | 'string'
  | 'unknown-key'
  | 'type'
  | 'range'
  | 'inconsistent'
  | 'preset'
  | 'hide'
  | 'step'
  | 'checkpoints';

export type ShareResult =
  | { readonly ok: true; readonly state: ShareState; readonly config: Config }
  | { readonly ok: false; readonly code: ShareErrorCode; readonly error: string };

/** The sentence every failure ends with. */
export const SHARE_FALLBACK = 'The playground opened its default settings instead.';

const HIDE_SUFFIX = '_hide';
const HIDEABLE: ReadonlySet<string> = new Set<string>([...CONFIG_KEYS, ...HIDEABLE_EXTRA]);
/** Characters never allowed in a link string: C0/C1 controls, line/paragraph separators, bidi overrides. */
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

class ShareFail {
  constructor(
    readonly code: ShareErrorCode,
    readonly reason: string,
  ) {}
}

function fail(code: ShareErrorCode, reason: string): ShareResult {
  return { ok: false, code, error: `This link could not be opened: ${reason} ${SHARE_FALLBACK}` };
}

/** A value quoted for a message: JSON-escaped (no raw control characters), cut short. */
function quote(v: unknown): string {
  let s: string;
  try {
    s = JSON.stringify(v) ?? typeof v;
  } catch {
    s = '(a value nested too deeply to show)';
  }
  return s.length > 80 ? `${s.slice(0, 80)}…` : s;
}

// ---------------------------------------------------------------------------------------------
// base64url (RFC 4648 §5, no padding) over the platform's btoa / atob, strict: one spelling per byte string.

export function base64urlEncode(bytes: Uint8Array): string {
  let binary = '';
  for (let i = 0; i < bytes.length; i++) binary += String.fromCharCode(bytes[i]!); // a link is a few KiB at most
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/** Decodes base64url without padding; a string that is not exactly that is a ShareFail('base64'). */
function base64urlDecode(s: string): Uint8Array {
  const bad = (why: string) => new ShareFail('base64', `its data is not valid base64url (${why}); the link may have been cut or altered when copied.`);
  if (s.length % 4 === 1) throw bad(`${s.length} characters cannot encode whole bytes`);
  const i = s.search(/[^A-Za-z0-9_-]/);
  if (i >= 0) throw bad(`character ${quote(s[i])} at position ${i + 1}`);
  const binary = atob(s.replace(/-/g, '+').replace(/_/g, '/')); // atob takes unpadded input
  const out = new Uint8Array(binary.length);
  for (let k = 0; k < binary.length; k++) out[k] = binary.charCodeAt(k);
  // atob ignores bits of the last character that encode no byte; a link has them zero.
  if (base64urlEncode(out) !== s) throw bad('its last character has stray bits');
  return out;
}

// ---------------------------------------------------------------------------------------------
// deflate-raw through fflate (synchronous, the same bytes in every browser and in Node).

/** Input fed to the inflater at a time: its output is counted between slices, so a bomb stops early. */
const INFLATE_SLICE = 256;

/**
 * Inflates `bytes`, stopping as soon as the output passes `cap` bytes. Throws ShareFail('deflate')
 * on damaged or incomplete data and ShareFail('too-large') past the cap. Bytes after the end of
 * the deflate stream are ignored (fflate stops at its final block).
 */
function inflateRawCapped(bytes: Uint8Array, cap: number): Uint8Array {
  const r = bytes.length === 0 ? null : inflateCapped(bytes, cap, INFLATE_SLICE);
  if (r?.ok) return r.bytes;
  if (r?.why === 'too-large') throw new ShareFail('too-large', `its settings decompress to more than ${cap} bytes (the most a link may hold).`);
  throw new ShareFail('deflate', 'its compressed data is damaged or incomplete; the link may have been cut short when copied.');
}

// ---------------------------------------------------------------------------------------------
// Canonical JSON and the link's object.

/** JSON with object keys sorted at every level: the same value always gives the same text. */
export function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map((x) => canonicalJson(x)).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    const keys = Object.keys(v).filter((k) => (v as Record<string, unknown>)[k] !== undefined).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson((v as Record<string, unknown>)[k])}`).join(',')}}`;
  }
  return JSON.stringify(v);
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function checkString(s: string, what: string, max = MAX_SHARE_STRING): void {
  if (s.length > max) throw new ShareFail('string', `${what} ${quote(s)} is longer than ${max} characters.`);
  if (CONTROL.test(s)) throw new ShareFail('string', `${what} ${quote(s)} contains a control character.`);
}

function configFail(e: unknown, code: ShareErrorCode): ShareFail {
  if (e instanceof ConfigError) return new ShareFail(code, e.message);
  return new ShareFail(code, `its settings were refused (${e instanceof Error ? e.message : String(e)}).`);
}

/** Checks the link's object and builds the state and the full config; throws ShareFail. */
function readLinkObject(obj: unknown): { state: ShareState; config: Config } {
  if (!isPlainObject(obj)) {
    throw new ShareFail('not-object', `its settings are ${Array.isArray(obj) ? 'a JSON array' : `the JSON value ${quote(obj)}`}, not an object of settings.`);
  }
  const entries = Object.entries(obj);
  for (const [k, v] of entries) {
    checkString(k, 'the key');
    if (typeof v === 'string') checkString(v, `the value of "${k}",`, k === 'question' ? MAX_SHARE_QUESTION : MAX_SHARE_STRING);
  }
  // The preset first: it is the base every other value is checked against.
  let preset: string | undefined;
  let base: Config = defaultConfig();
  if ('preset' in obj) {
    const p = obj.preset;
    if (typeof p !== 'string') throw new ShareFail('type', `"preset" = ${quote(p)} has the wrong type: expected a preset name.`);
    if (!PRESETS.some((x) => x.name === p)) throw new ShareFail('preset', `it names an unknown preset ${quote(p)}; presets: ${PRESETS.map((x) => x.name).join(', ')}.`);
    preset = p;
    base = presetConfig(p);
  }
  const overrides: Partial<Record<ConfigKey, unknown>> = {};
  const hide: string[] = [];
  let rawStep: unknown;
  let rawCheckpoints: unknown;
  let projector = false;
  let question: string | undefined;
  for (const [k, v] of entries) {
    if (k === 'preset') continue;
    if (k === 'question') {
      if (typeof v !== 'string' || v.trim() === '') throw new ShareFail('type', `"question" = ${quote(v)} must be a non-empty text of at most ${MAX_SHARE_QUESTION} characters.`);
      question = v.trim();
    } else if (k === 'projector') {
      if (v !== true) throw new ShareFail('type', `"projector" = ${quote(v)} must be true (leave it out for the viewer's own choice).`);
      projector = true;
    } else if (k === 'step') {
      rawStep = v;
    } else if (k === 'checkpoints') {
      rawCheckpoints = v;
    } else if (k.endsWith(HIDE_SUFFIX) && HIDEABLE.has(k.slice(0, -HIDE_SUFFIX.length))) {
      if (v !== true) throw new ShareFail('hide', `the hide flag "${k}" = ${quote(v)} must be true (leave it out to show the control).`);
      hide.push(k.slice(0, -HIDE_SUFFIX.length));
    } else if (isConfigKey(k)) {
      try {
        overrides[k] = coerceValue(k, v, 'typed');
      } catch (e) {
        throw configFail(e, e instanceof SettingTypeError ? 'type' : 'range');
      }
    } else {
      throw new ShareFail('unknown-key', `${unknownSetting(k, v).message} A link may also hold "preset", "step", "checkpoints", "projector", "question" and "<setting>_hide".`);
    }
  }
  let config: Config;
  try {
    config = parseConfig(overrides, base);
  } catch (e) {
    throw configFail(e, 'inconsistent');
  }
  const state: { -readonly [K in keyof ShareState]: ShareState[K] } = { config: overrides, hide: hide.sort() };
  if (preset !== undefined) state.preset = preset;
  if (projector) state.projector = true;
  if (question !== undefined) state.question = question;
  if (rawStep !== undefined) state.step = readStep(rawStep, config);
  if (rawCheckpoints !== undefined) state.checkpoints = readCheckpoints(rawCheckpoints, config);
  return { state, config };
}

/** What a link says of a checkpoint entry's wrong field ('': not an object). */
function linkCheckpointProblem(field: string | { readonly unknown: string }, e: unknown, c: Config): string {
  if (typeof field !== 'string') return `has an unknown entry ${quote(field.unknown)} (allowed: ${SEAT_CHECKPOINT_KEYS.join(', ')})`;
  const rule = checkpointRule(field, c.agents);
  if (field === '') return `has an entry that is not ${rule.is}`;
  const value = isPlainObject(e) ? e[field] : undefined;
  return `needs each ${field} to be ${rule.is} (${rule.what})${value === undefined ? ', and one has none' : `, not ${quote(value)}`}`;
}

function readCheckpoints(v: unknown, c: Config): ShareCheckpoint[] {
  const bad = (why: string) => new ShareFail('checkpoints', `"checkpoints" = ${quote(v)} ${why}.`);
  if (!isLlmTask(c.task)) throw bad(`seats checkpoints, but task "${c.task}" is not a language task`);
  if (!Array.isArray(v) || v.length === 0) throw bad('is not a non-empty list of {agent, hash, name}');
  const out: ShareCheckpoint[] = [];
  for (const e of v) {
    const field = failedField(linkCheckpointSchema, e);
    if (field !== undefined) throw bad(linkCheckpointProblem(field, e, c));
    const x = e as SeatCheckpoint;
    if (x.agent >= c.agents) throw bad(linkCheckpointProblem('agent', x, c));
    if (CONTROL.test(x.name)) throw bad(linkCheckpointProblem('name', x, c));
    if (out.some((y) => y.agent === x.agent)) throw bad(`seats agent ${x.agent} twice`);
    out.push(linkCheckpoint(x));
  }
  return out.sort((a, b) => a.agent - b.agent);
}

function readStep(v: unknown, c: Config): StepRef {
  const bad = (why: string) => new ShareFail('step', `"step" = ${quote(v)} ${why}.`);
  const field = failedField(stepRefSchema, v);
  const stageWrong = `needs a stage that is an integer in [1, ${c.stages}] (the run's stages)`;
  const agentWrong = `needs an agent that is an integer in [0, ${c.agents - 1}] (the team's agents)`;
  if (field === '' || !isPlainObject(v)) throw bad('is not an object {stage, agent}');
  if (typeof field === 'object') throw bad(`has an unknown entry ${quote(field.unknown)} (allowed: stage, agent)`);
  if (field !== undefined) throw bad(field === 'stage' ? stageWrong : agentWrong);
  const { stage, agent } = v as unknown as StepRef;
  if (stage < 1 || stage > c.stages) throw bad(stageWrong);
  if (agent === undefined) return { stage };
  if (agent >= c.agents) throw bad(agentWrong);
  return { stage, agent };
}

/** The flat object a state is written as (keys sorted later by canonicalJson). */
function linkObject(state: ShareState): Record<string, unknown> {
  const o: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(state.config)) if (v !== undefined) o[k] = v;
  for (const k of state.hide) o[k + HIDE_SUFFIX] = true;
  if (state.preset !== undefined) o.preset = state.preset;
  if (state.projector) o.projector = true;
  if (state.question !== undefined && state.question.trim() !== '') o.question = state.question.trim();
  if (state.step !== undefined) o.step = state.step.agent === undefined ? { stage: state.step.stage } : { stage: state.step.stage, agent: state.step.agent };
  if (state.checkpoints !== undefined && state.checkpoints.length > 0) o.checkpoints = [...state.checkpoints].sort((a, b) => a.agent - b.agent).map(linkCheckpoint);
  return o;
}

// ---------------------------------------------------------------------------------------------
// Public API.

/**
 * The hash for `state` (starting with SHARE_PREFIX). Canonical: keys are sorted and hide flags
 * deduplicated, so equal states give equal strings whatever order their keys were inserted in.
 * Rejects (FormatError, with decodeShare's message) a state that would not open, or whose link
 * would pass MAX_SHARE_HASH_CHARS — a link this function writes always opens.
 */
export async function encodeShare(state: ShareState): Promise<string> {
  const obj = linkObject({ ...state, hide: [...new Set(state.hide)] });
  try {
    readLinkObject(JSON.parse(canonicalJson(obj)));
  } catch (e) {
    if (e instanceof ShareFail) throw new FormatError(`Cannot make a share link: ${e.reason}`);
    throw e;
  }
  const json = new TextEncoder().encode(canonicalJson(obj));
  if (json.length > MAX_SHARE_JSON_BYTES) throw new FormatError(`Cannot make a share link: its settings take ${json.length} bytes, more than ${MAX_SHARE_JSON_BYTES}.`);
  const hash = SHARE_PREFIX + base64urlEncode(deflateSync(json, { level: 9 }));
  if (hash.length > MAX_SHARE_HASH_CHARS) throw new FormatError(`Cannot make a share link: it would be ${hash.length} characters long, more than ${MAX_SHARE_HASH_CHARS}.`);
  return hash;
}

/**
 * Reads a hash (with or without its leading "#"). Never throws: a link that cannot be opened is
 * `{ ok: false, code, error }`, the message saying what was wrong and that the defaults were
 * opened. On success, `config` is the full checked config (preset + overrides) to run.
 */
export async function decodeShare(hash: string): Promise<ShareResult> {
  try {
    if (typeof hash !== 'string') return fail('empty', 'it holds no settings.');
    if (hash.length > MAX_SHARE_HASH_CHARS) {
      return fail('too-long', `it is ${hash.length} characters long, more than the ${MAX_SHARE_HASH_CHARS} a share link may have.`);
    }
    const h = hash.startsWith('#') ? hash.slice(1) : hash;
    if (h.trim() === '') return fail('empty', 'it holds no settings after "#".');
    const m = /^v(\d{1,6})\./.exec(h);
    if (!m) return fail('prefix', `it does not start with "${SHARE_PREFIX}" (it starts with ${quote(h.slice(0, 12))}); it may not be a share link of this playground.`);
    const version = Number(m[1]);
    if (version !== SHARE_VERSION) {
      return fail('version', `it is of format version ${version}, and this playground reads version ${SHARE_VERSION} only${version > SHARE_VERSION ? ' (it was made by a newer playground)' : ''}.`);
    }
    const compressed = base64urlDecode(h.slice(m[0].length));
    const raw = inflateRawCapped(compressed, MAX_SHARE_JSON_BYTES);
    let text: string;
    try {
      text = new TextDecoder('utf-8', { fatal: true }).decode(raw);
    } catch {
      return fail('utf8', 'its settings are not valid UTF-8 text.');
    }
    let obj: unknown;
    try {
      obj = JSON.parse(text);
    } catch (e) {
      return fail('json', `its settings are not valid JSON (${e instanceof Error ? e.message.slice(0, 120) : 'parse error'}).`);
    }
    const { state, config } = readLinkObject(obj);
    return { ok: true, state, config };
  } catch (e) {
    if (e instanceof ShareFail) return fail(e.code, e.reason);
    return fail('json', `reading it failed unexpectedly (${e instanceof Error ? e.message.slice(0, 120) : String(e)}).`);
  }
}

/**
 * The state that shares `config`: only the keys that differ from `preset`'s config (or from the
 * defaults when no preset is named), plus the step and hidden controls.
 */
export function makeShareState(config: Config, opts: { preset?: string; step?: StepRef; hide?: readonly string[]; checkpoints?: readonly ShareCheckpoint[]; projector?: boolean; question?: string | null } = {}): ShareState {
  const base = opts.preset !== undefined ? presetConfig(opts.preset) : defaultConfig();
  const state: { -readonly [K in keyof ShareState]: ShareState[K] } = { config: diffConfig(config, base), hide: [...new Set(opts.hide ?? [])].sort() };
  if (opts.preset !== undefined) state.preset = opts.preset;
  if (opts.projector) state.projector = true;
  if (opts.question && opts.question.trim() !== '') state.question = opts.question.trim();
  if (opts.step !== undefined) state.step = opts.step;
  if (opts.checkpoints !== undefined && opts.checkpoints.length > 0) state.checkpoints = opts.checkpoints.map(linkCheckpoint);
  return state;
}
