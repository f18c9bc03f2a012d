/**
 * The comlink glue around AgentApi, both sides of the boundary:
 *
 *   withTransfer(api)       worker side: every result's ArrayBuffers are transferred, not copied
 *                           (AgentApi promises its results are fresh and unshared).
 *   installErrorTransfer()  both sides: a thrown SatError (NumericError, ConfigError, FormatError,
 *                           AgentWorkerError) arrives as the same class with its code, key and
 *                           message; comlink alone would deliver a bare Error with the message.
 *
 * Outgoing arguments (main → worker) are cloned, not transferred: the stage loop keeps using what
 * it passes (a batch's obs, a snapshot it may restore twice). The one exception, the model file in
 * an LmSpec, is copied and transferred by src/workers/remoteTeam.ts.
 *
 * Not here: AgentApi itself (agentApi.ts, comlink-free), worker lifetime and death (remoteTeam.ts).
 */
import { transfer, transferHandlers, type TransferHandler } from 'comlink';
import { ConfigError, FormatError, NumericError, SatError } from '../core/errors';
import type { AgentApi } from './agentApi';
import { AgentWorkerError, DeviceLostError } from './errors';

/** The ArrayBuffers under a result: typed arrays at the top, in arrays, or in a plain object's fields. */
function buffersOf(value: unknown, out: Set<ArrayBuffer>, depth = 0): Set<ArrayBuffer> {
  if (depth > 3 || value === null || typeof value !== 'object') return out;
  if (ArrayBuffer.isView(value)) {
    if (value.buffer instanceof ArrayBuffer) out.add(value.buffer);
  } else if (Array.isArray(value)) {
    for (const v of value) buffersOf(v, out, depth + 1);
  } else if (Object.getPrototypeOf(value) === Object.prototype) {
    for (const v of Object.values(value)) buffersOf(v, out, depth + 1);
  }
  return out;
}

/**
 * `value` with every typed array on a SharedArrayBuffer replaced by an unshared copy (at the same
 * depths buffersOf walks). A CPU tensor resident in the SIMD kernels' shared memory
 * (src/backend/cpu/simd.ts) is such a view: cloned as it is, it would hand the main thread a live
 * window onto the worker's whole kernel memory, so nothing shared crosses.
 */
function unshared(value: unknown, depth = 0): unknown {
  if (depth > 3 || value === null || typeof value !== 'object') return value;
  if (ArrayBuffer.isView(value)) {
    return typeof SharedArrayBuffer === 'function' && value.buffer instanceof SharedArrayBuffer && 'slice' in value ? (value as unknown as Float32Array).slice() : value;
  }
  if (Array.isArray(value)) {
    const out = value.map((v) => unshared(v, depth + 1));
    return out.some((v, i) => v !== value[i]) ? out : value;
  }
  if (Object.getPrototypeOf(value) === Object.prototype) {
    const entries = Object.entries(value);
    const out = entries.map(([k, v]) => [k, unshared(v, depth + 1)] as const);
    return out.some(([, v], i) => v !== entries[i]![1]) ? Object.fromEntries(out) : value;
  }
  return value;
}

/** `api` with every method's result marked for transfer (what the worker file exposes). */
export function withTransfer(api: AgentApi): AgentApi {
  installErrorTransfer();
  const wrapped: Record<string, unknown> = {};
  // The public methods (AgentApi keeps its helpers #private, so they are not listed here).
  const proto = Object.getPrototypeOf(api) as object; // AgentApi.prototype, without importing its code here
  for (const name of Object.getOwnPropertyNames(proto)) {
    const f: unknown = Object.getOwnPropertyDescriptor(proto, name)?.value;
    if (name === 'constructor' || typeof f !== 'function') continue;
    wrapped[name] = async (...args: unknown[]) => {
      const r: unknown = unshared(await (f as (...a: unknown[]) => Promise<unknown>).apply(api, args));
      return r !== null && typeof r === 'object' ? transfer(r, [...buffersOf(r, new Set())]) : r;
    };
  }
  return wrapped as unknown as AgentApi;
}

/** What crosses for a thrown value. */
interface WireError {
  readonly isError: boolean;
  readonly value: unknown;
}

interface ErrorFields {
  /** The SatError class, by a name minification cannot change (a production bundle renames classes). */
  readonly kind?: string;
  readonly message: string;
  readonly name: string;
  readonly stack?: string;
  readonly code?: string;
  readonly key?: string;
  readonly value?: unknown;
}

/** Most specific first: the first class an error is an instance of names its kind. */
const ERROR_KINDS: readonly (readonly [string, abstract new (...a: never[]) => Error])[] = [
  ['AgentWorkerError', AgentWorkerError],
  ['DeviceLostError', DeviceLostError],
  ['ConfigError', ConfigError],
  ['NumericError', NumericError],
  ['FormatError', FormatError],
  ['SatError', SatError],
];

function serializeThrown(thrown: unknown): WireError {
  if (!(thrown instanceof Error)) return { isError: false, value: thrown };
  const kind = ERROR_KINDS.find(([, cls]) => thrown instanceof cls)?.[0];
  const f: { -readonly [K in keyof ErrorFields]: ErrorFields[K] } = { kind, message: thrown.message, name: kind ?? thrown.name, stack: thrown.stack };
  if (thrown instanceof SatError) f.code = thrown.code;
  if (thrown instanceof ConfigError) {
    f.key = thrown.key;
    // Only values that surely clone.
    const v = thrown.value;
    if (v === null || ['string', 'number', 'boolean', 'undefined'].includes(typeof v)) f.value = v;
  }
  return { isError: true, value: f };
}

/** Rebuilds the thrown value: the same SatError class where its kind is known, else an Error. */
export function deserializeThrown(w: WireError): unknown {
  if (!w.isError) return w.value;
  const f = w.value as ErrorFields;
  const cls = ERROR_KINDS.find(([kind]) => kind === f.kind)?.[1];
  const e: Error = cls ? (Object.create(cls.prototype) as Error) : new Error(f.message);
  // Own, non-enumerable like a constructed Error's; the worker's stack says where it was thrown.
  Object.defineProperty(e, 'message', { value: f.message, writable: true, configurable: true });
  Object.defineProperty(e, 'name', { value: f.name, writable: true, configurable: true });
  if (f.stack !== undefined) Object.defineProperty(e, 'stack', { value: f.stack, writable: true, configurable: true });
  if (f.code !== undefined) Object.assign(e, { code: f.code });
  if (f.key !== undefined) Object.assign(e, { key: f.key, value: f.value });
  return e;
}

let installed = false;

/**
 * Replaces comlink's "throw" handler (process-wide, idempotent) with one that keeps SatError
 * classes and fields. Same wire shape as comlink's own, so either side may run the default.
 */
export function installErrorTransfer(): void {
  if (installed) return;
  installed = true;
  // comlink marks thrown values with a private symbol: keep its canHandle, replace the rest.
  const original = transferHandlers.get('throw')!;
  const handler: TransferHandler<{ value: unknown }, WireError> = {
    canHandle: (v: unknown): v is { value: unknown } => original.canHandle(v),
    serialize: ({ value }) => [serializeThrown(value), []],
    deserialize: (w) => {
      throw deserializeThrown(w);
    },
  };
  transferHandlers.set('throw', handler as TransferHandler<unknown, unknown>);
}
