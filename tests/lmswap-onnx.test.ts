/**
 * Plug-and-play onto an ONNX target (src/sat/lmSwap.ts with src/sat/onnxSeat.ts `prepareOnnxSwap`):
 * agent 1 of a chain holds a tiny random ONNX decoder (trainable, our model); it is swapped for
 * another one of the same family and tokenizer (other weights, 4-bit MatMulNBits, GQA 4/1) whose
 * π_pre is computed by onnxruntime-web. Checked: π_pre's logits are onnxruntime-web's (against
 * the graph run directly), every token state the projection visits is within δ0 of π_cur (the
 * radius the swap record claims is maxNew · δ0 per message), the projection samples with the
 * seat's tokenizer, a SAT stage runs after the swap; and a target with another tokenizer — the
 * shipped character tokenizer's seat, or a folder without the chat template — is refused by name.
 */
import { describe, expect, it } from 'vitest';
import { klForward } from '../src/backend/cpu/softmax';
import { ConfigError } from '../src/core/errors';
import { OrtDecoder } from '../src/model/onnx/ort';
import { readOnnx } from '../src/model/onnx/read';
import { ProjectedLmAgent } from '../src/sat/agents/projected';
import { logitRows, pack } from '../src/sat/agents/lm';
import { runStages, type LlmExperiment, type LmSeat } from '../src/sat/experiment';
import { createLlmExperiment } from '../src/sat/llmExperiment';
import { hfSeatAgent, hfSeatBudget, hfSeatSeed } from '../src/sat/hfSeat';
import { configuredLmSwap } from '../src/sat/lmSwap';
import { checkSwapTokenizer, prepareOnnxSwap, seatOnnxTrainable, tokenizerDifference } from '../src/sat/onnxSeat';
import { parseConfig } from '../src/sat/config';
import { agentSteps } from '../src/sat/rollout';
import { tokenizer as charTokenizer, type TextTokenizer } from '../src/model/tokenizer';
import { Rng } from '../src/core/rng';
import { onnxFolder } from './helpers/onnxFolder';
import { tinyModelBytes } from './helpers/tinyModel';

const DELTA0 = 0.02;
const cfg = parseConfig({ task: 'arithmetic', level: 1, agents: 2, protocol: 'chain', batch: 2, group: 2, evalEpisodes: 8, maxNew: 6, stages: 2, epochs: 1, swapAgent: 1, swapAt: 2, swapTo: 'onnx', stage0Delta: DELTA0, temperature: 1 });
const seatFolder = onnxFolder({ kvHeads: 2, maxPositions: 128, seed: 5 }, { weights: 'f32' });
const target = onnxFolder({ kvHeads: 1, maxPositions: 128, seed: 9, hidden: 128 }, { weights: 'q4', naming: 'genai', external: true, file: 'onnx/model_q4.onnx' });

/** A chain whose agent 1 is the trainable ONNX seat on `seatFolder`. */
async function team(): Promise<LlmExperiment> {
  const exp = await createLlmExperiment(cfg, async () => tinyModelBytes(1));
  const seat = await seatOnnxTrainable(seatFolder.files, seatFolder.file, cfg, 1, { quant: 'f32', maxSeq: 80 });
  exp.team[1] = hfSeatAgent(1, seat.model, { loraRank: 2, loraAlpha: 4, seed: hfSeatSeed(cfg.seed, 1), temperature: cfg.temperature, topK: cfg.topK }) as LmSeat;
  return exp;
}

describe('plug-and-play onto an ONNX target', () => {
  it('π_pre from onnxruntime-web, every state within δ0, the seat keeps its tokenizer, a stage runs', async () => {
    const exp = await team();
    const seatTk = exp.team[1]!.tokenizer as TextTokenizer;
    const t = await prepareOnnxSwap(target.files, target.file, cfg, 1, seatTk, 'tests/tiny-llama#1', { quant: 'q8', maxSeq: 80, loraRank: 2 });
    console.log(`ONNX swap target ${target.file}: parity ${t.parity.maxAbs.toExponential(2)} nats (tolerance ${t.parity.tolerance}), ${t.ep}`);
    expect(t.parity.maxAbs).toBeLessThan(1e-4);

    // π_pre's rows are the graph's own logits (one direct run per sequence).
    const batch = await exp.env.rollout(exp.team, 2, 2, new Rng(4));
    const steps = { ...agentSteps(batch, 1), context: batch.context };
    const p = pack(steps);
    const rows = await t.pre.logitRows(p.tokens, p.B, p.T, p.row);
    const dec = await OrtDecoder.create(target.files, readOnnx(target.files, target.file));
    const V = t.model.cfg.vocab;
    // The first sequence, run alone up to its last state: every one of its rows, bit for bit.
    const inFirst = Array.from(p.row).filter((r) => r < p.T);
    const direct = await dec.logits(p.tokens.subarray(0, Math.max(...inFirst) + 1));
    expect(inFirst.length).toBeGreaterThan(0);
    inFirst.forEach((r, k) => expect(Array.from(rows.subarray(k * V, (k + 1) * V))).toEqual(Array.from(direct.logits.subarray(r * V, (r + 1) * V))));
    // … and they differ from the outgoing seat's: the swap moves something.
    const cur = await logitRows((exp.team[1] as unknown as { model: Parameters<typeof logitRows>[0] }).model, p.tokens, p.B, p.T, p.row);
    const kl = new Float32Array(p.row.length);
    klForward(kl, rows, cur, p.row.length, V, 1);
    expect(Math.max(...kl)).toBeGreaterThan(10 * DELTA0);
    await dec.release();

    let report: Parameters<NonNullable<Parameters<typeof configuredLmSwap>[2]>>[0] | undefined;
    // A loader of shipped models (the page's) refuses swapTo = onnx by name before loading anything.
    const shippedOnly = configuredLmSwap(async () => { throw new Error('not reached'); });
    await expect(shippedOnly(exp, 1, 'arithmetic-onnx')).rejects.toThrow('swapTo = onnx swaps agent 1 onto an ONNX folder, which only the command line takes (--swap 1=DIR)');
    exp.swapModel = configuredLmSwap(async () => t, 'projection', (r) => (report = r), true);
    const records = await runStages(exp, 2);
    const swap = records[1]!.swap!;
    const r = report!;
    console.log(`swap onto ONNX: KL(π_pre‖π_cur) q50/q99 ${r.klPre.q50.toExponential(2)}/${r.klPre.q99.toExponential(2)} (${(100 * r.klPre.aboveDelta).toFixed(0)} % > δ0); seated q99 ${r.klSeated.q99.toExponential(2)}; ${r.states} states; J ${r.jBefore.toFixed(3)} → ${r.jAfter.toFixed(3)}`);
    expect(r.states).toBeGreaterThan(0);
    expect(r.klPre.aboveDelta).toBeGreaterThan(0); // the target really is outside the ball somewhere
    expect(r.klProjected.aboveDelta).toBe(0);
    expect(r.klProjected.q99).toBeLessThanOrEqual(DELTA0 * (1 + 1e-3));
    expect(swap.certRadius).toBeCloseTo(cfg.maxNew * DELTA0, 12);
    expect(swap.incoming).toBe('arithmetic-onnx');
    const seat = exp.team[1]!;
    expect(seat).toBeInstanceOf(ProjectedLmAgent);
    expect(tokenizerDifference((seat as ProjectedLmAgent).tokenizer, seatTk, cfg, 1)).toBeNull();
    expect(Number.isFinite(records[1]!.jAfter)).toBe(true);
  }, 300_000);

  it('a target with another tokenizer is refused by name', async () => {
    const exp = await team();
    // The shipped character tokenizer's seat (agent 0) against a tokenizer.json.
    const a = () => checkSwapTokenizer(target.files, target.file, cfg, 0, charTokenizer, 'arithmetic-S#0');
    expect(a).toThrow(ConfigError);
    expect(a).toThrow(/The swap of agent 0 \(arithmetic-S#0\) onto onnx\/model_q4\.onnx: the two models do not share a tokenizer \(a vocabulary of 64 ids against 264\)/);
    // The same vocabulary without the chat template: its messages end at another token.
    const plain = onnxFolder({ kvHeads: 2, maxPositions: 128, seed: 9, chat: false }, { weights: 'f32' });
    const seatTk = exp.team[1]!.tokenizer as TextTokenizer;
    const b = () => checkSwapTokenizer(plain.files, plain.file, cfg, 1, seatTk, 'tests/tiny-llama#1');
    expect(b).toThrow(/do not share a tokenizer \(messages end at token 263 against 261\)/);
    expect(tokenizerDifference(seatTk, seatTk, cfg, 1)).toBeNull();
    await expect(prepareOnnxSwap(plain.files, plain.file, cfg, 1, seatTk, 'tests/tiny-llama#1', { quant: 'q8', maxSeq: 80, loraRank: hfSeatBudget(cfg).loraRank })).rejects.toThrow(/do not share a tokenizer/);
  }, 120_000);
});
