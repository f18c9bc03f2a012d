/**
 * The CLI reads only regular files inside the chosen checkpoint folder (src/cli/hfSeat.ts
 * openHfFolder): a link to /dev/zero or out of the folder, a named pipe as config.json, a folder
 * named like a file, a file larger than its config allows — each refused by name before a byte
 * is read; links inside the folder and a Hugging Face cache snapshot (links into ../../blobs) are
 * read. An ONNX folder's files are only checked here and go to the budgeted onnxFolder job as
 * sized paths (nothing read in the CLI's thread), whose read refuses a pipe put in a checked file's
 * place without blocking. And the real CLI (tsx, a child process) prints a checkpoint's or an ONNX folder's name full
 * of terminal escapes (a newline included) escaped, refuses 100,000-deep JSON with a specific
 * message, not a stack overflow, and an ONNX graph with a cycle by name before onnxruntime sees it.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SatError } from '../src/core/errors';
import { openHfFolder } from '../src/cli/hfSeat';
import { readOnnxFolder } from '../src/cli/onnxSeat';
import { onnxFolder } from './helpers/onnxFolder';
import { hfCheckpoint, writeHfFolder } from './helpers/hfCheckpoint';
import { checkedPath } from './helpers/checkedPath';
import { deepJson, onnxCycle } from './helpers/hostile';
import { presetConfig } from '../src/sat/presets';
import type { Check } from '../src/workers/budget';

/** The seat an ONNX folder is read for here: arith-team's settings, frozen. */
const SEAT = { settings: presetConfig('arith-team', {}), mode: 'frozen' as const };

function folder(edit: (dir: string) => void = () => {}, files = hfCheckpoint().files): string {
  const dir = join(mkdtempSync(join(tmpdir(), 'sat-hostile-')), 'ck');
  mkdirSync(dir);
  writeHfFolder(dir, files);
  edit(dir);
  return dir;
}

async function refusal(dir: string): Promise<string> {
  try {
    await (await openHfFolder(dir)).close();
  } catch (e) {
    expect(e).toBeInstanceOf(SatError);
    return (e as Error).message;
  }
  throw new Error('the folder was read');
}

describe('openHfFolder: files are files', () => {
  it('refuses a link to /dev/zero, and any link out of the folder', async () => {
    const zero = folder((d) => { renameSync(join(d, 'model.safetensors'), join(d, '..', 'elsewhere')); symlinkSync('/dev/zero', join(d, 'model.safetensors')); });
    expect(await refusal(zero)).toBe('--agent-model: "model.safetensors" in the checkpoint folder is a link to a file outside the folder; copy the file into the folder instead');
    const passwd = folder((d) => symlinkSync('/etc/passwd', join(d, 'extra.json')));
    expect(await refusal(passwd)).toContain('"extra.json" in the checkpoint folder is a link to a file outside the folder');
  });

  it('refuses a named pipe as config.json without blocking, and a folder named extra.json', async () => {
    const fifo = folder((d) => { renameSync(join(d, 'config.json'), join(d, 'x')); spawnSync('mkfifo', [join(d, 'config.json')]); });
    expect(await refusal(fifo)).toBe('--agent-model: "config.json" in the checkpoint folder is a named pipe, not a file');
    const dir = folder((d) => mkdirSync(join(d, 'extra.json')));
    expect(await refusal(dir)).toBe('--agent-model: "extra.json" in the checkpoint folder is a folder, not a file');
  });

  it('refuses a tokenizer.json larger than its vocab_size allows before reading it', async () => {
    const big = folder((d) => writeFileSync(join(d, 'tokenizer.json'), new Uint8Array(5 * 2 ** 20)));
    expect(await refusal(big)).toBe('--agent-model: "tokenizer.json" in the checkpoint folder is 5.0 MiB, more than the 4.3 MiB this playground reads for it with this config.json (docs/models.md, "Input limits")');
  });

  it('reads links inside the folder, and a Hugging Face cache snapshot whose files link into ../../blobs', async () => {
    const inner = folder((d) => { mkdirSync(join(d, 'sub')); renameSync(join(d, 'tokenizer.json'), join(d, 'sub', 't')); symlinkSync('sub/t', join(d, 'tokenizer.json')); });
    const opened = await openHfFolder(inner);
    expect(opened.files.has('tokenizer.json')).toBe(true);
    await opened.close();
    const cache = join(mkdtempSync(join(tmpdir(), 'sat-hfcache-')), 'models--tiny');
    const snap = join(cache, 'snapshots', 'abc123');
    mkdirSync(join(cache, 'blobs'), { recursive: true });
    mkdirSync(snap, { recursive: true });
    for (const [name, bytes] of hfCheckpoint().files) {
      writeFileSync(join(cache, 'blobs', `blob-${name}`), bytes);
      symlinkSync(join('..', '..', 'blobs', `blob-${name}`), join(snap, name));
    }
    const snapped = await openHfFolder(snap);
    await snapped.close();
    expect([...snapped.files.keys()].sort()).toEqual([...hfCheckpoint().files.keys()].sort());
  });
});

function sat(...args: string[]) {
  const r = spawnSync(process.execPath, ['--import', 'tsx', 'src/cli/sat.ts', ...args], { encoding: 'utf8', timeout: 120_000 });
  return { code: r.status, err: r.stderr };
}

describe('readOnnxFolder: files are files', () => {
  /** An ONNX folder on disk (onnx/model.onnx + its JSON files), edited by `edit`. */
  function onnxDir(edit: (dir: string) => void = () => {}): string {
    const dir = join(mkdtempSync(join(tmpdir(), 'sat-hostile-onnx-')), 'ck');
    mkdirSync(join(dir, 'onnx'), { recursive: true });
    writeHfFolder(dir, onnxFolder().files);
    edit(dir);
    return dir;
  }
  async function onnxRefusal(dir: string, cap = 2 ** 30): Promise<string> {
    try {
      await readOnnxFolder(dir, 'onnx/model.onnx', cap, SEAT);
    } catch (e) {
      expect(e).toBeInstanceOf(SatError);
      return (e as Error).message;
    }
    throw new Error('the folder was read');
  }

  it('reads a well-formed folder', async () => {
    const { files } = await readOnnxFolder(onnxDir(), 'onnx/model.onnx', 2 ** 30, SEAT);
    expect([...files.keys()]).toContain('onnx/model.onnx');
    expect([...files.keys()]).toContain('tokenizer.json');
  });
  it("reads no byte in the CLI's own thread: every file goes to the onnxFolder job as a sized path, and what comes back is the job's", async () => {
    const dir = onnxDir();
    const posted: unknown[] = [];
    const back = new Uint8Array([7]);
    const recording = (async (job: string, input: { files: { name: string; source: unknown }[] }) => {
      posted.push({ job, input });
      return { head: { context: 1, vocab: 1, config: {} }, names: input.files.map((f) => f.name), bytes: input.files.map(() => back) };
    }) as unknown as Check;
    const { files } = await readOnnxFolder(dir, 'onnx/model.onnx', 2 ** 30, SEAT, recording);
    expect(posted).toHaveLength(1);
    const { job, input } = posted[0] as { job: string; input: { files: { name: string; source: { path?: unknown; size?: unknown } }[]; mode: string } };
    expect(job).toBe('onnxFolder');
    expect(input.mode).toBe('frozen');
    expect(input.files.map((f) => f.name)).toEqual(expect.arrayContaining(['config.json', 'tokenizer.json', 'onnx/model.onnx']));
    for (const f of input.files) {
      expect(f.source).not.toBeInstanceOf(Uint8Array);
      expect(typeof f.source.path).toBe('string');
      expect(typeof f.source.size).toBe('number');
    }
    expect([...files.values()].every((b) => b === back)).toBe(true);
  });
  it("the worker's read of a path refuses a named pipe put in a checked file's place without blocking, and reads no more than the size checked", async () => {
    const { sourceBytes } = await import('../src/workers/inputJobs');
    const dir = mkdtempSync(join(tmpdir(), 'sat-hostile-read-'));
    spawnSync('mkfifo', [join(dir, 'pipe')]);
    await expect(sourceBytes(checkedPath(join(dir, 'pipe')))).rejects.toThrow(/pipe" is not a regular file; nothing was read/);
    writeFileSync(join(dir, 'grown'), new Uint8Array(100).fill(7));
    expect(await sourceBytes({ ...checkedPath(join(dir, 'grown')), size: 40 })).toEqual(new Uint8Array(40).fill(7));
  });
  it("the worker's read of a checked path refuses a link, another file or a shorter file put in its place after the check", async () => {
    const { rangeServer, sourceBytes } = await import('../src/workers/inputJobs');
    const dir = mkdtempSync(join(tmpdir(), 'sat-hostile-swap-'));
    const path = join(dir, 'model.safetensors');
    const bytes = new Uint8Array(64).fill(3);
    writeFileSync(join(dir, 'other'), new Uint8Array(64).fill(9));
    const swapped = /model\.safetensors" is no longer the file that was checked \(another file or a link was put in its place after the check\); nothing was read$/;
    // a link to a file of the same size, put where the checked file was
    writeFileSync(path, bytes);
    const linked = checkedPath(path);
    rmSync(path);
    symlinkSync(join(dir, 'other'), path);
    await expect(sourceBytes(linked)).rejects.toThrow(swapped);
    expect(await rangeServer()({ open: [linked] })).toMatchObject({ ok: false, errorClass: 'FormatError', message: expect.stringMatching(swapped) });
    // another regular file of the same size renamed into its place
    rmSync(path);
    writeFileSync(path, bytes);
    const renamed = checkedPath(path);
    writeFileSync(join(dir, 'twin'), bytes);
    renameSync(join(dir, 'twin'), path);
    await expect(sourceBytes(renamed)).rejects.toThrow(swapped);
    // the same file, truncated since
    const cut = checkedPath(path);
    writeFileSync(path, bytes.subarray(0, 10));
    await expect(sourceBytes(cut)).rejects.toThrow(/model\.safetensors" is 10 bytes, fewer than the 64 it had when it was checked/);
    // and the file checked, unchanged, is read
    writeFileSync(path, bytes);
    expect(await sourceBytes(checkedPath(path))).toEqual(bytes);
  });
  it('refuses a tokenizer.json larger than config.json\'s vocab_size allows, in the job, before reading it', async () => {
    const big = onnxDir((d) => writeFileSync(join(d, 'tokenizer.json'), new Uint8Array(4 * 2 ** 20 + 1024 * 300)));
    expect(await onnxRefusal(big)).toMatch(/^--agent-model: "tokenizer\.json" in the ONNX folder is 4\.3 MiB, more than the 4\.\d MiB this playground reads for it with the vocab_size of config\.json/);
  });
  it('refuses a graph behind a linked sub-folder that leads out of the folder, a pipe as the graph, and a graph past the cap', async () => {
    const outside = onnxDir((d) => {
      const away = join(d, '..', 'away');
      renameSync(join(d, 'onnx'), away);
      symlinkSync(away, join(d, 'onnx'));
    });
    expect(await onnxRefusal(outside)).toMatch(/"onnx\/model\.onnx" in the ONNX folder is reached through a link outside the folder/);
    const fifo = onnxDir((d) => { renameSync(join(d, 'onnx', 'model.onnx'), join(d, 'x')); spawnSync('mkfifo', [join(d, 'onnx', 'model.onnx')]); });
    expect(await onnxRefusal(fifo)).toMatch(/is a named pipe, not a file/);
    expect(await onnxRefusal(onnxDir(), 1024)).toMatch(/more than the 1\.0 KiB this playground reads for it on this machine/);
  });
});

describe('the CLI prints what came from a file escaped, and refuses deep JSON by name', () => {
  const SMALL = ['--stages', '1', '--set', 'batch=2', '--set', 'group=2', '--set', 'evalEpisodes=8', '--set', 'epochs=1'];

  it('a _name_or_path of terminal escapes reaches the terminal escaped', () => {
    const evil = '\u001b]0;TITLE\u0007\u001b[2J\u001b[31mRED\u001b[0m\r\nerror: fake line';
    const dir = folder(() => {}, hfCheckpoint({ kvHeads: 2, maxPositions: 128, config: { _name_or_path: evil } }).files);
    const r = sat('--preset', 'arith-team', ...SMALL, '--agent-model', `1=${dir}`);
    expect(r.code).toBe(0);
    expect(r.err).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/);
    expect(r.err).toContain('agent 1 is \\u{1b}]0;TITLE\\u{7}\\u{1b}[2J\\u{1b}[31mRED\\u{1b}[0m\\r\\nerror: fake line:');
    expect(r.err.split('\n').some((l) => l.startsWith('error:'))).toBe(false);
  });

  it("an ONNX folder's hostile graph ends in its refusal and status 2, before onnxruntime: no stack trace", () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'sat-hostile-onnx-')), 'ck');
    mkdirSync(join(dir, 'onnx'), { recursive: true });
    writeHfFolder(dir, new Map([...onnxFolder().files].filter(([n]) => !n.endsWith('_data')).map(([n, b]) => [n, n.endsWith('.onnx') ? onnxCycle() : b] as const)));
    const r = sat('--preset', 'arith-team', '--agent-model', `1=${dir}`, '--agent-onnx', 'frozen');
    expect(r.code).toBe(2);
    expect(r.err.trim()).toMatch(/^error: onnx\/model\.onnx: node "(first|second)" \(Identity\) is on a cycle/);
    expect(r.err).not.toMatch(/\n\s+at |please report/);
  });

  it("an ONNX folder's _name_or_path with a newline reaches the terminal escaped, and the folder's path", () => {
    const evil = 'org/x\nerror: forged \u001b[2J';
    const dir = join(mkdtempSync(join(tmpdir(), 'sat-hostile-onnx-')), 'c\u001bk'); // (a newline cannot reach --agent-model: J=DIR is one line)
    mkdirSync(join(dir, 'onnx'), { recursive: true });
    const files = new Map(onnxFolder().files);
    files.set('config.json', new TextEncoder().encode(JSON.stringify({ ...JSON.parse(new TextDecoder().decode(files.get('config.json')!)), _name_or_path: evil })));
    writeHfFolder(dir, files);
    const r = sat('--preset', 'arith-team', ...SMALL, '--agent-model', `1=${dir}`, '--agent-onnx', 'frozen');
    expect(r.code, r.err).toBe(0);
    expect(r.err).not.toMatch(/[\u0000-\u0009\u000b-\u001f]/);
    expect(r.err).toContain('agent 1 is org/x\\nerror: forged \\u{1b}[2J: never updated');
    expect(r.err).toContain('c\\u{1b}k/onnx/model.onnx: frozen');
    expect(r.err.split('\n').some((l) => l.startsWith('error:'))).toBe(false);
  });

  it('100,000-deep config.json: a specific message and status 2, no stack overflow', () => {
    const dir = folder((d) => writeFileSync(join(d, 'config.json'), deepJson(100_000)));
    const r = sat('--preset', 'arith-team', '--agent-model', `1=${dir}`);
    expect(r.code).toBe(2);
    expect(r.err.trim()).toBe('error: checkpoint folder: "config.json" nests arrays and objects more than 64 deep (at byte 100); no file of its kind is nested so deeply');
  });
});
