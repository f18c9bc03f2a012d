/**
 * The header's backend line, said once and short (UX: "the backend in use is always visible"):
 * what really runs the agents — table agents in TypeScript; language agents on WebGPU (the
 * adapter's name) or on the CPU's WebAssembly SIMD kernels with their thread count, or why one
 * thread — and a visible warning when the page is not cross-origin isolated (no SharedArrayBuffer,
 * so the CPU kernels cannot use threads). The whole sentence, with each agent's reasons, is the hover.
 *
 * Not here: choosing a backend (the agents' workers do) or drawing (Header.tsx).
 */
import { backendShort } from './format';

export interface BackendFacts {
  /** Agents in Web Workers (false: in this tab). */
  readonly workers: boolean;
  /** Each agent's backend line as its worker says it ("cpu (TypeScript) — why", "webgpu (adapter)"). */
  readonly agents: readonly { readonly kind: string; readonly backend: string }[];
  /** Language agents on the CPU: whether the WebAssembly SIMD kernels load in this browser. */
  readonly simd: boolean;
  /** Language agents on the CPU: the kernels' threads per agent (1 when none) and why one. */
  readonly threads: { readonly n: number; readonly why: string } | null;
  /** globalThis.crossOriginIsolated. */
  readonly isolated: boolean;
}

export interface BackendLine {
  /** One short line: "3 Web Workers · WebAssembly SIMD kernels, 4 threads each". */
  readonly short: string;
  /** Every detail, for the hover. */
  readonly detail: string;
  /** Said visibly beside the line (not cross-origin isolated), or null. */
  readonly warn: string | null;
}

/**
 * What runs one agent, in the header's words (the team cards say the same): tables in TypeScript,
 * onnxruntime-web (a frozen ONNX teammate), WebGPU and its adapter, or the CPU's WebAssembly SIMD kernels — with their threads when known
 * (`threads` left out: a card, which does not know them) — or TypeScript where SIMD is missing.
 */
export function agentKind(kind: string, backend: string, simd: boolean, threads?: { readonly n: number } | null): string {
  const b = backendShort(backend);
  if (kind === 'tabular') return 'tables in TypeScript';
  if (b.startsWith('onnxruntime')) return b; // a frozen ONNX teammate: onnxruntime-web runs it, not our kernels
  if (b.startsWith('webgpu')) return `WebGPU, ${b.replace(/^webgpu \(?/, '').replace(/\)$/, '') || 'adapter unnamed'}`;
  if (!simd) return 'CPU kernels in TypeScript (no WebAssembly SIMD here)';
  if (threads === undefined) return 'WebAssembly SIMD kernels';
  return threads && threads.n > 1 ? `WebAssembly SIMD kernels, ${threads.n} threads each` : 'WebAssembly SIMD kernels, one thread each';
}

export function backendLine(f: BackendFacts): BackendLine {
  const n = f.agents.length;
  const where = f.workers ? `${n} Web Worker${n === 1 ? '' : 's'}` : `${n} agent${n === 1 ? '' : 's'} in this tab`;
  const kinds = new Set<string>();
  for (const a of f.agents) kinds.add(agentKind(a.kind, a.backend, f.simd, f.threads));
  const cpuLm = f.agents.some((a) => a.kind !== 'tabular' && !backendShort(a.backend).startsWith('webgpu'));
  const reasons = [...new Set(f.agents.map((a) => a.backend.split(' — ').slice(1).join(' — ')).filter((x) => x !== ''))];
  const oneThread = cpuLm && f.threads && f.threads.n <= 1 && f.threads.why ? `One thread per agent: ${f.threads.why}.` : '';
  const warn = f.isolated
    ? null
    : cpuLm
      ? 'Not cross-origin isolated: one CPU thread per agent (the host must send COOP/COEP headers, docs/performance.md "Threads").'
      : 'Not cross-origin isolated: a language team would get one CPU thread per agent (table games do not need threads).';
  const detail = [`Where the agents' models, optimizers and kernels run: ${where}, ${[...kinds].join(' / ')}.`, ...reasons.map((r) => `${r[0]!.toUpperCase()}${r.slice(1)}.`), oneThread, f.isolated ? 'The page is cross-origin isolated (SharedArrayBuffer available).' : warn ?? ''].filter((x) => x !== '').join(' ');
  return { short: `${where} · ${[...kinds].join(' / ')}`, detail, warn };
}

/** Whether this browser validates a WebAssembly module using SIMD (v128) — what the CPU kernels need. */
export function wasmSimd(): boolean {
  try {
    // (module (func (result v128) i32.const 0 i8x16.splat i8x16.popcnt)) — the usual feature probe.
    const bytes = new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1, 0, 10, 10, 1, 8, 0, 65, 0, 253, 15, 253, 98, 11]);
    return typeof WebAssembly === 'object' && WebAssembly.validate(bytes);
  } catch {
    return false;
  }
}
