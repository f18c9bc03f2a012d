/**
 * Browser test: an ONNX model folder as an agent in the page (docs/models.md, "An ONNX model
 * folder"). A tiny random decoder in the onnx-community layout (tests/helpers/onnxFolder.ts:
 * config.json, tokenizer files, onnx/model.onnx and a 4-bit onnx/model_q4.onnx with external
 * data) is picked on agent 1's card of a shrunk arith-team with "frozen" chosen first: the card
 * says what a folder needs before the picker opens, then shows the ONNX file and mode, the
 * worker's execution provider, memory estimate and context (src/app/onnxSeatInfo.ts), the agent's
 * backend line names onnxruntime-web and its execution provider (wasm here: the only adapter is
 * SwiftShader's, a software one, which the seat passes over), and Step stage runs a stage around
 * the frozen teammate; then the card's Graph list and a second pick seat the folder's other graph. onnxruntime-web's files come from the page's own origin (no CDN).
 *
 * Not here: the seat's logic and records (tests/onnx-*.test.ts).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeShare, makeShareState } from '../../src/app/share';
import { presetConfig } from '../../src/sat/presets';
import { onnxFolder } from '../helpers/onnxFolder';
import { openPlayground, settled, SETUP_TIMEOUT_MS, type Playground } from './harness';

let pg: Playground;
let dir: string;

beforeAll(async () => {
  pg = await openPlayground();
  dir = mkdtempSync(join(tmpdir(), 'sat-onnxseat-'));
}, SETUP_TIMEOUT_MS);

afterAll(async () => {
  await pg?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

// A small certification batch: the certificate is not what this file checks.
const cfg = presetConfig('arith-team', { agents: 2, batch: 2, group: 2, evalEpisodes: 8, geoIters: 0, probeEpisodes: 4, epochs: 1, maxNew: 3, stages: 3, certEpisodes: 32 });
const rows = 'document.querySelectorAll(\'[data-testid="stage-row"]\').length';

describe('an ONNX model folder as an agent in the page', () => {
  it('picks a folder frozen on agent 1\'s card and steps a stage around it', async () => {
    const folder = join(dir, 'tiny-onnx');
    const spec = { kvHeads: 2, maxPositions: 128 };
    const files = new Map(onnxFolder(spec, { weights: 'f32' }).files);
    for (const [k, v] of onnxFolder(spec, { weights: 'q4', external: true, file: 'onnx/model_q4.onnx' }).files) if (k.startsWith('onnx/')) files.set(k, v);
    for (const [name, bytes] of files) {
      mkdirSync(dirname(join(folder, name)), { recursive: true });
      writeFileSync(join(folder, name), bytes);
    }
    const p = await pg.freshPage();
    const requests: string[] = [];
    p.on('request', (r) => requests.push(r.url()));
    await p.goto(pg.url + (await encodeShare(makeShareState(cfg, { preset: 'arith-team' }))), { waitUntil: 'load' });
    await p.getByText(/Opened a shared experiment/).waitFor({ timeout: 120_000 });
    await settled(p);
    expect(await p.getByTestId('checkpoint-1-needs-help').innerText()).toMatch(/an ONNX model folder \(config\.json, tokenizer\.json, onnx\/model\.onnx/);

    await p.getByTestId('checkpoint-1-onnx-mode').selectOption('frozen');
    await p.getByTestId('checkpoint-1-input').setInputFiles(folder);
    await p.getByTestId('checkpoint-1-name').waitFor({ timeout: 180_000 });
    await settled(p);
    expect(await p.getByTestId('checkpoint-1-onnx').innerText()).toMatch(/^ONNX onnx\/model\.onnx, frozen: run by onnxruntime-web/);
    // The worker's own account of the seat: its execution provider and why, its memory estimate and context.
    await p.getByTestId('checkpoint-1-onnx-info').waitFor({ timeout: 60_000 });
    expect(await p.getByTestId('checkpoint-1-onnx-info').innerText()).toMatch(/^onnxruntime-web on (wasm|WebGPU) \(.+\); memory estimate [\d.]+ (KiB|MiB); context \d+ tokens$/);
    const card = await p.getByTestId('agent-1').innerText();
    expect(card).toMatch(/tiny-onnx@[0-9a-f]{8}#1/);
    expect(card).toMatch(/onnxruntime-web (wasm|webgpu)/);

    console.log(`agent 1's card: ${card.replace(/\s+/g, ' ')}`);
    await p.getByTestId('step-stage').click();
    await p.waitForFunction(`${rows} === 1 || document.querySelector('[data-testid="error"]') !== null`, undefined, { timeout: 400_000 });
    expect(await p.getByTestId('error').count(), await p.getByTestId('error').first().innerText().catch(() => '')).toBe(0);
    await settled(p);
    // The folder has two graphs: the notice names the other, and the card's Graph list re-seats it.
    expect(await p.getByTestId('notice').innerText()).toMatch(/Its folder also has onnx\/model_q4\.onnx: choose one under Graph/);
    await p.getByTestId('checkpoint-1-onnx-graph').selectOption('onnx/model_q4.onnx');
    await p.getByTestId('checkpoint-1-input').setInputFiles(folder);
    await p.getByText(/^ONNX onnx\/model_q4\.onnx, frozen/).waitFor({ timeout: 180_000 });
    await settled(p);
    const origin = new URL(pg.url).origin;
    expect(requests.filter((u) => !u.startsWith(origin) && !u.startsWith('data:') && !u.startsWith('blob:'))).toEqual([]);
    expect(requests.some((u) => /ort-wasm-simd-threaded\.jsep.*\.wasm/.test(u))).toBe(true);
    expect(pg.errors).toEqual([]);
  }, 600_000);
});
