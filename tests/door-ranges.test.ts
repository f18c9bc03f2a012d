/**
 * A checkpoint folder the CLI seats is read through the door, none of it in the CLI's own thread
 * (src/cli/hfSeat.ts openHfFolder): config.json, the caps, the JSON files and every safetensors
 * header in the budgeted checkpointFolder job; the weights in a range session (src/workers/budget.ts
 * budgetedRanges, src/cli/inputCheck.ts cliRanges), each range read in the worker thread and handed
 * over. Checked here: the weights loaded that way equal those of the bytes in memory bit for bit,
 * no read is larger than a row block or a header, one buffer goes to and fro (a read's bytes are
 * handed back with the next read), a hostile header is refused in the job naming
 * the file, a file swapped after the check is refused by the session, and a read that outruns its
 * time or a worker that dies ends the session with a message naming the file and the range.
 */
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openHfFolder } from '../src/cli/hfSeat';
import { cliRanges } from '../src/cli/inputCheck';
import { FormatError, SatError } from '../src/core/errors';
import { loadHfCheckpoint } from '../src/model/hfLoad';
import type { ByteRanges } from '../src/model/safetensors';
import { budgetedRanges, type OpenRanges, type SessionWorker } from '../src/workers/budget';
import type { RangeReply, RangeRequest } from '../src/workers/inputJobs';
import { checkedPath } from './helpers/checkedPath';
import { hfCheckpoint, writeHfFolder, type HfSpec } from './helpers/hfCheckpoint';

function folder(spec: HfSpec): { dir: string; files: Map<string, Uint8Array> } {
  const dir = join(mkdtempSync(join(tmpdir(), 'sat-door-ranges-')), 'ck');
  mkdirSync(dir);
  const { files } = hfCheckpoint(spec);
  writeHfFolder(dir, files);
  return { dir, files };
}

/** cliRanges, each read's length recorded. */
function recorded(reads: number[]): OpenRanges {
  return async (list, what) => {
    const opened = await cliRanges()(list, what);
    const files = new Map<string, ByteRanges>();
    for (const [name, f] of opened.files) files.set(name, { byteLength: f.byteLength, read: (b, e) => (reads.push(e - b), f.read(b, e)) });
    return { files, close: opened.close };
  };
}

const bytesOf = (a: ArrayBufferView) => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);

describe("a checkpoint folder read through the CLI's door", () => {
  it('loads the weights of the bytes in memory bit for bit, each range read in the worker thread, none larger than a row block or a header', async () => {
    const { dir, files } = folder({ dtype: 'BF16', kvHeads: 2, tied: true, shards: 2, seed: 21 });
    const reads: number[] = [];
    const opened = await openHfFolder(dir, { ranges: recorded(reads) });
    try {
      for (const [name, f] of opened.files) expect(f instanceof Uint8Array, name).toBe(name.endsWith('.json'));
      const chunkBytes = 3 * 64 * 2; // three rows of d = 64 BF16 values
      const got = await loadHfCheckpoint(opened.files, { quant: 'q8', chunkBytes });
      const want = await loadHfCheckpoint(files, { quant: 'q8', chunkBytes });
      for (const [name, t] of want.weights) {
        const g = got.weights.get(name)!;
        const arrays = (x: typeof t) => (x.dtype === 'f32' ? [x.data] : [x.q, x.scales]);
        expect(arrays(g).map(bytesOf), name).toEqual(arrays(t).map(bytesOf));
      }
      const headers = [...files].filter(([n]) => n.endsWith('.safetensors')).map(([, b]) => new DataView(b.buffer, b.byteOffset).getUint32(0, true));
      const longestRow = Math.max(got.cfg.hidden, got.cfg.d) * 2;
      expect(reads.length).toBeGreaterThan(10);
      expect(Math.max(...reads)).toBeLessThanOrEqual(Math.max(...headers, chunkBytes, longestRow));
    } finally {
      await opened.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("refuses a bad safetensors header in the checkpointFolder job, naming the file, before any range session", async () => {
    const { dir } = folder({ seed: 22, mutate: (st) => void st.set('bogus.weight', { dtype: 'F32', shape: [2], data: new Float32Array(2) }) });
    let sessions = 0;
    const err = await openHfFolder(dir, { ranges: async (l, w) => (sessions++, cliRanges()(l, w)) }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FormatError);
    expect((err as Error).message).toMatch(/^model\.safetensors: .*unexpected tensor "bogus\.weight"; it is not part of a Llama model with this config\.json/);
    expect(sessions).toBe(0);
    // a tensor name of terminal escapes (C0, C1, a newline) comes back escaped
    const evil = folder({ seed: 24, mutate: (st) => void st.set('x\u009b[2J\u001b]0;T\u0007\nerror: forged', { dtype: 'F32', shape: [2], data: new Float32Array(2) }) });
    const msg = ((await openHfFolder(evil.dir).catch((e: unknown) => e)) as Error).message;
    expect(msg).toContain('unexpected tensor "x\\u{9b}[2J\\u001b]0;T\\u0007\\nerror: forged"');
    expect(msg).not.toMatch(/[\u0000-\u001f\u007f-\u009f]/);
  });

  it("passes one buffer to and fro: a read's bytes are handed back with the next read (detached, never overwritten)", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sat-door-buffer-'));
    const path = join(dir, 'w.safetensors');
    writeFileSync(path, Uint8Array.from({ length: 64 }, (_, i) => i));
    const { files, close } = await cliRanges()([{ name: 'w.safetensors', source: checkedPath(path) }], 'x');
    try {
      const f = files.get('w.safetensors')!;
      const first = await f.read(0, 16);
      expect([...first]).toEqual(Array.from({ length: 16 }, (_, i) => i));
      const second = await f.read(16, 24); // read into the first's buffer, which went back to the worker
      expect(first.byteLength).toBe(0);
      expect([...second]).toEqual(Array.from({ length: 8 }, (_, i) => 16 + i));
      expect(second.buffer.byteLength).toBe(16);
      const third = await f.read(24, 64); // larger than the buffer: a new one
      expect([...third]).toEqual(Array.from({ length: 40 }, (_, i) => 24 + i));
    } finally {
      await close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a safetensors file swapped for a link after the check is refused when the session opens it', async () => {
    const { dir } = folder({ seed: 23 });
    const path = join(dir, 'model.safetensors');
    const checked = checkedPath(path);
    writeFileSync(join(dir, '..', 'other'), new Uint8Array(checked.size));
    rmSync(path);
    symlinkSync(join(dir, '..', 'other'), path);
    const err = await cliRanges()([{ name: 'model.safetensors', source: checked }], '--agent-model: the checkpoint folder ck').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SatError);
    expect((err as Error).message).toMatch(/model\.safetensors" is no longer the file that was checked \(another file or a link was put in its place after the check\); nothing was read$/);
  });
});

/** A session worker answering `open` with the sizes, then each read by `onRead` (nothing: it never answers). */
function fakeWorker(onRead: (w: { reply: (r: RangeReply) => void; die: (why: string) => void }) => void): () => SessionWorker {
  return () => {
    let reply: (r: RangeReply) => void = () => {};
    let die: (why: string) => void = () => {};
    return {
      post: (m: RangeRequest) => {
        if ('open' in m) queueMicrotask(() => reply({ ok: true, value: m.open.map(() => 8) }));
        else if ('read' in m) onRead({ reply, die });
        else queueMicrotask(() => reply({ ok: true, value: null }));
      },
      onMessage: (cb) => void (reply = cb),
      onDeath: (cb) => void (die = cb),
      terminate: () => {},
    };
  };
}

describe('a range session under its budget', () => {
  const source = new Uint8Array(8);
  it('a read that outruns its time ends the session, naming the file and the range; later reads are refused too', async () => {
    const open = budgetedRanges(fakeWorker(() => {}), { timeMs: 30 });
    const { files } = await open([{ name: 'model.safetensors', source }], '--agent-model: the checkpoint folder ck');
    const f = files.get('model.safetensors')!;
    const err = await f.read(0, 8).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FormatError);
    expect((err as Error).message).toBe('--agent-model: the checkpoint folder ck: reading bytes [0, 8) of "model.safetensors" took longer than 0.031 s, the time this playground gives a read of its size (docs/models.md, "Input limits"); it was stopped and nothing was loaded');
    await expect(f.read(0, 4)).rejects.toThrow(/took longer than 0\.031 s/);
  });

  it('a worker that dies mid-read ends the session with why, and its memory limit', async () => {
    const open = budgetedRanges(fakeWorker(({ die }) => queueMicrotask(() => die('it ran out of memory'))), { timeMs: 10_000, memory: '1.0 GiB of heap' });
    const { files } = await open([{ name: 'a.safetensors', source }], 'the folder');
    await expect(files.get('a.safetensors')!.read(0, 8)).rejects.toThrow('the folder: reading it was stopped: it ran out of memory (the limit is 1.0 GiB of heap); nothing was loaded');
  });

  it('answers reads in order, each with its own bytes', async () => {
    const open = budgetedRanges(fakeWorker(({ reply }) => queueMicrotask(() => reply({ ok: true, value: new Uint8Array([1, 2]) }))), { timeMs: 10_000 });
    const { files, close } = await open([{ name: 'a', source }], 'x');
    const f = files.get('a')!;
    expect(await Promise.all([f.read(0, 2), f.read(2, 4)])).toEqual([new Uint8Array([1, 2]), new Uint8Array([1, 2])]);
    await close();
    await expect(f.read(0, 2)).rejects.toThrow('x: its files were closed');
  });
});
