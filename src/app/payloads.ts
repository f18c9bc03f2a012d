/**
 * What experiment files and share links carry beside the config, as runtime schemas written once:
 * a seat's checkpoint ({agent, name, hash, quant?, onnx?}), an ONNX seat's {file, mode}, an
 * agent's info and a step reference ({stage, agent?}). The types are inferred from the schemas.
 * What each checkpoint field must be is worded once (`checkpointRule`); a file's message and a
 * link's put it in their own sentence, keyed by the field the schema found wrong (`failedField`).
 *
 * Not here: the relations between fields and the config (an agent below the team's size, a step
 * within the run: savefile.ts, share.ts), the records (src/sat/records.ts).
 */
import * as v from 'valibot';
import { count, type SameKeys } from '../core/schema';
import { SEAT_QUANTS, type QuantKind } from '../model/quant';
import type { AgentInfo } from '../sat/types';
import type { StepRef } from './stepRef';

/** Longest checkpoint name a file or link holds ("folder@short hash"). */
export const MAX_SEAT_NAME = 64;

/** An ONNX model folder's seat: which .onnx file of the folder (or its onnx/), trainable or frozen. */
export const onnxSeatSchema = v.strictObject({
  file: v.pipe(v.string(), v.maxLength(200), v.regex(/^(?:onnx\/)?[^/]+\.onnx$/)),
  mode: v.picklist(['trainable', 'frozen']),
});
export type OnnxSeat = v.InferOutput<typeof onnxSeatSchema>;

/** How a seat stores its weights. */
export const seatQuantSchema = v.picklist(SEAT_QUANTS as readonly QuantKind[]);

/** A seat on a checkpoint of its own; the hash is hfFolderHash of its files. `quant` absent: q8 (links). */
export const seatCheckpointSchema = v.object({
  agent: count,
  name: v.pipe(v.string(), v.minLength(1), v.maxLength(MAX_SEAT_NAME)),
  hash: v.pipe(v.string(), v.regex(/^[0-9a-f]{64}$/)),
  quant: v.optional(seatQuantSchema),
  onnx: v.optional(onnxSeatSchema),
});
export type SeatCheckpoint = v.InferOutput<typeof seatCheckpointSchema>;
/** The keys a checkpoint entry may have. */
export const SEAT_CHECKPOINT_KEYS = Object.keys(seatCheckpointSchema.entries) as (keyof SeatCheckpoint)[];

/**
 * What a checkpoint entry's `field` must be, in the words of every message about it (n: the
 * team's size): `is` what a valid value is, `what` the field's role. '' is the entry itself.
 */
export function checkpointRule(field: string, n: number): { readonly what: string; readonly is: string } {
  switch (field) {
    case 'agent':
      return { what: 'an agent', is: `an integer in [0, ${n - 1}]` };
    case 'hash':
      return { what: 'a folder hash', is: '64 lowercase hex digits' };
    case 'name':
      return { what: 'a checkpoint name', is: `1..${MAX_SEAT_NAME} printable characters` };
    case 'quant':
      return { what: "a seat's quantization", is: `one of ${SEAT_QUANTS.map((q) => `"${q}"`).join(', ')}` };
    case 'onnx':
      return { what: "an ONNX folder's seat", is: '{file: "….onnx", mode: "trainable" or "frozen"}' };
    default:
      return { what: 'a seat', is: 'an object {agent, name, hash, quant?, onnx?}' };
  }
}

/** An agent's name, kind, parameter count and backend. */
export const agentInfoSchema = v.object({ name: v.string(), kind: v.picklist(['tabular', 'lm']), parameters: count, backend: v.string() });

/** {stage, agent?} with whole numbers and nothing else. */
export const stepRefSchema = v.strictObject({ stage: count, agent: v.optional(count) });

/**
 * The field `x` fails `schema` at: a key of the object, '' when `x` is not an object (or, for a
 * strict object, the name of an unknown key, as `{ unknown }`); undefined when it conforms.
 */
export function failedField(schema: v.GenericSchema, x: unknown): string | { readonly unknown: string } | undefined {
  const r = v.safeParse(schema, x, { abortEarly: true });
  if (r.success) return undefined;
  const issue = r.issues[0];
  const key = issue.path?.[0]?.key;
  if (typeof key !== 'string') return '';
  return issue.type === 'strict_object' && issue.expected === 'never' ? { unknown: key } : key;
}

type Same<A, B> = SameKeys<A, B> extends true ? ([A] extends [B] ? ([B] extends [A] ? true : false) : false) : false;
/** Compile-time: the inferred shapes are the ones the app's own types name. */
export type PayloadSchemasAgree = [Same<v.InferOutput<typeof agentInfoSchema>, AgentInfo>, SameKeys<v.InferOutput<typeof stepRefSchema>, StepRef>] extends [true, true] ? true : never;
export const payloadSchemasAgree: PayloadSchemasAgree = true;
