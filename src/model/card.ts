/**
 * The model card: a small JSON record that travels with every shipped model (inside the
 * safetensors `__metadata__` under "card", and as a `.json` file beside it) saying what the model
 * is, what it was trained on and how well it does:
 *
 *   { name, parameters, vocab, config, task, dataSeed, heldOutAccuracy, pretrainSeconds, [pretrainWorkers], quant, created }
 *
 * `validateCard` checks an untrusted value field by field (FormatError naming the field, what it
 * must be and what it was) and cross-checks `parameters` and `vocab` against `config`.
 * `makeCard` builds a card whose derived fields (parameters, vocab, config) cannot disagree.
 *
 * Not here: producing the numbers (src/cli pretrain) or showing them (src/app).
 */
import { ConfigError, FormatError } from '../core/errors';
import { paramCount, parseConfig, type ModelConfig } from './config';
import { QUANT_KINDS, type QuantKind } from './quant';

export interface ModelCard {
  /** Short identifier, e.g. "arith-S". */
  readonly name: string;
  /** paramCount(config). */
  readonly parameters: number;
  /** config.vocab. */
  readonly vocab: number;
  readonly config: ModelConfig;
  /** Task (or task mix) the model was pretrained on, e.g. "arithmetic". */
  readonly task: string;
  /** Seed of the generated training data (integer ≥ 0). */
  readonly dataSeed: number;
  /** Accuracy on held-out generated data, in [0, 1]. */
  readonly heldOutAccuracy: number;
  /** Wall-clock pretraining time in seconds (≥ 0). */
  readonly pretrainSeconds: number;
  /** Threads that shared the pretraining (data parallel); absent on cards from before it existed (1). */
  readonly pretrainWorkers?: number;
  /** How the shipped weights are stored. */
  readonly quant: QuantKind;
  /** ISO 8601 creation time, e.g. "2025-01-31T12:00:00.000Z". */
  readonly created: string;
}

const CARD_KEYS = ['name', 'parameters', 'vocab', 'config', 'task', 'dataSeed', 'heldOutAccuracy', 'pretrainSeconds', 'pretrainWorkers', 'quant', 'created'] as const;
/** Fields a card may leave out. */
const OPTIONAL_KEYS: readonly string[] = ['pretrainWorkers'];

function typeOf(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'string') return `"${v.length > 40 ? v.slice(0, 40) + '…' : v}" (string)`;
  if (typeof v === 'number') return `${v} (number)`;
  return typeof v;
}

function bad(field: string, want: string, got: unknown): FormatError {
  return new FormatError(`model card field "${field}" must be ${want}, got ${typeOf(got)}`);
}

/** Checks an untrusted value (e.g. parsed JSON) and returns it as a ModelCard; FormatError otherwise. */
export function validateCard(raw: unknown): ModelCard {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new FormatError(`model card must be a JSON object, got ${typeOf(raw)}`);
  }
  const o = raw as Record<string, unknown>;
  for (const k of Object.keys(o)) {
    if (!(CARD_KEYS as readonly string[]).includes(k)) {
      throw new FormatError(`model card has unknown field "${k}"; known fields: ${CARD_KEYS.join(', ')}`);
    }
  }
  for (const k of CARD_KEYS) {
    if (!(k in o) && !OPTIONAL_KEYS.includes(k)) throw new FormatError(`model card is missing field "${k}"`);
  }
  const str = (k: string): string => {
    const v = o[k];
    if (typeof v !== 'string' || v.length === 0) throw bad(k, 'a non-empty string', v);
    return v;
  };
  const int = (k: string): number => {
    const v = o[k];
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) throw bad(k, 'an integer ≥ 0', v);
    return v;
  };
  const name = str('name');
  const task = str('task');
  const parameters = int('parameters');
  const vocab = int('vocab');
  const dataSeed = int('dataSeed');
  const acc = o.heldOutAccuracy;
  if (typeof acc !== 'number' || !(acc >= 0 && acc <= 1)) throw bad('heldOutAccuracy', 'a number in [0, 1]', acc);
  const secs = o.pretrainSeconds;
  if (typeof secs !== 'number' || !Number.isFinite(secs) || secs < 0) throw bad('pretrainSeconds', 'a finite number ≥ 0', secs);
  const workers = o.pretrainWorkers;
  if (workers !== undefined && (typeof workers !== 'number' || !Number.isSafeInteger(workers) || workers < 1)) throw bad('pretrainWorkers', 'an integer ≥ 1', workers);
  const quant = o.quant;
  if (typeof quant !== 'string' || !(QUANT_KINDS as readonly string[]).includes(quant)) {
    throw bad('quant', `one of ${QUANT_KINDS.map((q) => `"${q}"`).join(', ')}`, quant);
  }
  const created = str('created');
  if (!/^\d{4}-\d{2}-\d{2}(T[\d:.]+(Z|[+-]\d{2}:\d{2})?)?$/.test(created) || Number.isNaN(Date.parse(created))) {
    throw bad('created', 'an ISO 8601 date such as "2025-01-31T12:00:00.000Z"', created);
  }
  let config: ModelConfig;
  try {
    config = parseConfig(o.config);
  } catch (e) {
    if (e instanceof ConfigError) throw new FormatError(`model card field "config" is invalid: ${e.message}`);
    throw e;
  }
  const want = paramCount(config);
  if (parameters !== want) {
    throw new FormatError(`model card field "parameters" = ${parameters} disagrees with its config, which has ${want} parameters`);
  }
  if (vocab !== config.vocab) {
    throw new FormatError(`model card field "vocab" = ${vocab} disagrees with config.vocab = ${config.vocab}`);
  }
  return {
    name,
    parameters,
    vocab,
    config,
    task,
    dataSeed,
    heldOutAccuracy: acc,
    pretrainSeconds: secs,
    ...(workers !== undefined ? { pretrainWorkers: workers } : {}),
    quant: quant as QuantKind,
    created,
  };
}

/** The fields of a card that are not derived from the config. */
export type CardFields = Omit<ModelCard, 'parameters' | 'vocab' | 'config' | 'created'> & { readonly created?: string };

/** Builds (and validates) a card; parameters, vocab and config come from `cfg`, created defaults to now. */
export function makeCard(cfg: ModelConfig, fields: CardFields): ModelCard {
  return validateCard({
    name: fields.name,
    parameters: paramCount(cfg),
    vocab: cfg.vocab,
    config: { ...cfg },
    task: fields.task,
    dataSeed: fields.dataSeed,
    heldOutAccuracy: fields.heldOutAccuracy,
    pretrainSeconds: fields.pretrainSeconds,
    ...(fields.pretrainWorkers !== undefined ? { pretrainWorkers: fields.pretrainWorkers } : {}),
    quant: fields.quant,
    created: fields.created ?? new Date().toISOString(),
  });
}

/** The card as pretty JSON (the `.json` file shipped beside a model). */
export function cardToJson(card: ModelCard): string {
  return JSON.stringify(card, null, 2);
}

/** Parses and validates card JSON; FormatError if it is not JSON or not a valid card. */
export function cardFromJson(text: string): ModelCard {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    throw new FormatError(`model card is not valid JSON (${e instanceof Error ? e.message : String(e)})`);
  }
  return validateCard(raw);
}
