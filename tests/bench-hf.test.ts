/**
 * A smoke run of `npm run bench:hf` (bench/hf.ts) at `--size tiny`: ours f32 and onnxruntime-web
 * (wasm, 1 thread, on the KV-cache ONNX export) in child processes of their own, one timed call
 * each. It checks the run, not speed: both rows finished every workload with a positive rate, and
 * ORT's logits on the check prompt agree with ours (the ONNX export and the bench's decode loop
 * are right) and so do its 32 greedy tokens. Speed is the bench's own business (docs/performance.md).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import type { EngineResult } from '../bench/hfPeers';

it('bench:hf --size tiny runs ours and onnxruntime-web, logits checked', () => {
  const out = join(mkdtempSync(join(os.tmpdir(), 'bench-hf-test-')), 'r.json');
  execFileSync('npx', ['tsx', 'bench/hf.ts', '--size', 'tiny', '--engines', 'ours-f32,ort-web-1', '--reps', '1', '--budget', '1', '--json', out], { stdio: 'pipe', timeout: 120_000 });
  const r = JSON.parse(readFileSync(out, 'utf8')) as { rows: (EngineResult & { checkRel: { rel: number; greedySame: number } | null })[] };
  expect(r.rows.map((x) => x.engine)).toEqual(['ours-f32', 'ort-web-1']);
  for (const x of r.rows) {
    expect(x.skipped).toBeUndefined();
    expect(x.prefillMs.length).toBe(1);
    expect(x.decodeMs.map((d) => d.length)).toEqual([1, 1, 1]);
    expect(x.prefillMs[0]).toBeGreaterThan(0);
  }
  expect(r.rows[0]!.loraMs.length).toBe(1);
  const ort = r.rows[1]!.checkRel!;
  expect(ort.rel).toBeLessThan(1e-5);
  expect(ort.greedySame).toBe(32);
}, 150_000);
