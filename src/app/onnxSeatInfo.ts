/**
 * What an ONNX seat's card shows once its worker has it (docs/models.md, "An ONNX model folder"):
 * the execution provider onnxruntime-web runs on and why, the trainable seat's parity figure
 * (the largest next-token log-prob difference measured at seating, and the tolerance), the frozen
 * seat's memory estimate and context. Asked of the seat's worker (`onnxSeat()`) whenever the team
 * is rebuilt; null while there is none, or for another kind of seat.
 *
 * Not here: the check itself (src/model/onnx/parity.ts), the card (components/CheckpointPicker.tsx).
 */
import { useEffect, useState } from 'react';
import { formatBytes } from '../model/hfConfig';
import type { OnnxSeatInfo } from '../workers/agentApi';
import type { Session } from './session';
import { usePlayground } from './store';

/** The seat's info from agent j's worker, refreshed when the team's agents change. */
export function useOnnxSeatInfo(session: Session, j: number, seated: boolean): OnnxSeatInfo | null {
  const agents = usePlayground((s) => s.agents);
  const [info, setInfo] = useState<OnnxSeatInfo | null>(null);
  useEffect(() => {
    let live = true;
    const a = seated ? session.currentTeam()?.workers?.[j] : undefined;
    if (!a) setInfo(null);
    else a.onnxSeat().then((i) => live && setInfo(i), () => live && setInfo(null));
    return () => {
      live = false;
    };
  }, [session, j, seated, agents]);
  return info;
}

/** The card's line for it: "onnxruntime-web on wasm (why); parity: largest |Δ log p| … nats (tolerance 0.01)". */
export function describeOnnxSeatInfo(i: OnnxSeatInfo): string {
  const ep = `onnxruntime-web on ${i.ep === 'webgpu' ? 'WebGPU' : 'wasm'} (${i.epWhy})`;
  if (i.parity) return `${ep}; parity with our model at seating: largest |Δ log p| ${i.parity.maxAbs.toExponential(2)} nats over ${i.parity.prompts} prompts (tolerance ${i.parity.tolerance})`;
  const mem = i.estimateBytes !== undefined ? `; memory estimate ${formatBytes(i.estimateBytes)}` : '';
  return `${ep}${mem}${i.context !== undefined ? `; context ${i.context} tokens` : ''}`;
}
