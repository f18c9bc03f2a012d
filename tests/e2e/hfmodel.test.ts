/**
 * Browser test: a Hugging Face Llama checkpoint folder as an agent in the page (docs/models.md,
 * "Your own checkpoint"). A tiny random checkpoint folder (tests/helpers/hfCheckpoint.ts) is given
 * to agent 1's folder picker of a shrunk arith-team (the second seat, as `--agent-model 1=DIR` in
 * the CLI); the card shows the checkpoint (folder name + the same short hash Node computes), Step
 * stage trains it as agent 1, and a reload (the autosave)
 * seats it again from IndexedDB with the stage table intact. A malformed folder (a gpt2
 * config.json) shows the loader's own message and changes nothing. A share link records the seat
 * as {agent, hash, name}: opened where the checkpoint is stored, the seat is there at once;
 * opened in a fresh browser, the page says which checkpoint it needs, refuses a folder with
 * another hash, and seats the right one. The folder's files dropped on a card seat it too, and
 * Cancel during a load keeps the team as it was. The card's q8/q4/f32 choice loads and re-seats the
 * checkpoint so; an exported experiment file records the seat and, opened in a browser without the
 * checkpoint, asks for its folder instead of restoring into the shipped model — and restores the
 * file by itself once the folder is seated as the file ran it (seated as q8 for a q4 file, the
 * notice says to choose q4; chosen, it restores).
 *
 * Not here: the File list → map, storage and worker-seat details (tests/hfpage.test.ts).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { parseExperimentFile } from '../../src/app/savefile';
import { encodeShare, makeShareState, type ShareCheckpoint } from '../../src/app/share';
import { hfFolderHash } from '../../src/model/hfLoad';
import { hfCheckpoint, writeHfFolder } from '../helpers/hfCheckpoint';
import { playgroundAndFolder, settled, TINY_ARITH_TEAM, type Playground } from './harness';

let pg: Playground;
let dir: string;
playgroundAndFolder('sat-hfmodel-', (p, d) => {
  pg = p;
  dir = d;
});

const rows = 'document.querySelectorAll(\'[data-testid="stage-row"]\').length';

const cfg = TINY_ARITH_TEAM;

/** Opens `c` (default: cfg) through a share link made here (with the seats' checkpoints it names) and waits until the team is built. */
async function openLink(p: Page, checkpoints?: readonly ShareCheckpoint[], c = cfg): Promise<void> {
  await p.goto('about:blank'); // from the page itself, a change of hash alone would not load it again
  await p.goto(pg.url + (await encodeShare(makeShareState(c, { preset: 'arith-team', ...(checkpoints ? { checkpoints } : {}) }))), { waitUntil: 'load' });
  await p.getByText(/Opened a shared experiment/).waitFor({ timeout: 120_000 });
  await settled(p);
}

/** Picks `folder` on agent 1's card (after choosing `quant` when given) and waits until the seat is built. */
async function seatFolder(p: Page, folder: string, quant?: 'q8' | 'q4' | 'f32'): Promise<void> {
  if (quant) await p.getByTestId('checkpoint-1-quant').selectOption(quant);
  await p.getByTestId('checkpoint-1-input').setInputFiles(folder);
  await p.getByTestId('checkpoint-1-name').waitFor({ timeout: 120_000 });
  await settled(p);
}

describe('your own checkpoint as an agent in the page', () => {
  it('picks a folder for agent 1, steps a stage with it, and a reload seats it again; a gpt2 folder is refused and changes nothing', async () => {
    const good = hfCheckpoint();
    writeHfFolder(join(dir, 'tiny-llama'), good.files);
    writeHfFolder(join(dir, 'gpt2-folder'), hfCheckpoint({ config: { model_type: 'gpt2' } }).files);
    const hash = await hfFolderHash(good.files);
    const name = `tiny-llama@${hash.slice(0, 8)}`;

    const p = await pg.freshPage();
    await openLink(p);
    const before = await p.getByTestId('agent-1').innerText();
    expect(before).toContain('arithmetic-S#1');

    // A malformed folder: the loader's message, and the team as it was.
    await p.getByTestId('checkpoint-1-input').setInputFiles(join(dir, 'gpt2-folder'));
    await p.getByTestId('error').waitFor({ timeout: 60_000 });
    expect(await p.getByTestId('error').innerText()).toMatch(/Agent 1's checkpoint: .*model_type.*gpt2.*The team was not changed\./s);
    await settled(p);
    expect(await p.getByTestId('agent-1').innerText()).toBe(before);
    expect(await p.getByTestId('checkpoint-1-name').count()).toBe(0);

    // The good folder: progress, then the card shows it.
    await p.getByTestId('checkpoint-1-input').setInputFiles(join(dir, 'tiny-llama'));
    await p.getByTestId('checkpoint-1-name').waitFor({ timeout: 120_000 });
    await settled(p);
    expect(await p.getByTestId('checkpoint-1-name').innerText()).toBe(`checkpoint ${name}`);
    const card = await p.getByTestId('agent-1').innerText();
    expect(card).toContain(`${name}#1`);
    expect(card).toMatch(/[\d,]+ base params/);
    const needs = /needs about [\d.]+ [KM]iB \(estimate\)/.exec(card)?.[0] ?? 'no estimate on the card';
    expect(await p.getByTestId('checkpoint-1-stored').innerText()).toMatch(/^kept in this browser: [\d.]+ KiB$/);
    expect(await p.getByTestId('agent-0').innerText()).toContain('arithmetic-S#0');

    await p.getByTestId('step-stage').click();
    await p.waitForFunction(`${rows} === 1`, undefined, { timeout: 120_000 });
    await settled(p);
    const row = await p.getByTestId('stage-row').first().innerText();

    // A reload without the link: the autosave, with the seat restored from IndexedDB.
    await p.goto(pg.url, { waitUntil: 'load' });
    await p.getByText(/Restored your last experiment/).waitFor({ timeout: 120_000 });
    await settled(p);
    expect(await p.getByTestId('checkpoint-1-name').innerText()).toBe(`checkpoint ${name}`);
    expect(await p.getByTestId('checkpoint-1').innerText()).toContain(needs); // the same estimate, made again from the stored config
    expect(await p.getByTestId('agent-1').innerText()).toContain(`${name}#1`);
    expect(await p.evaluate(rows)).toBe(1);
    expect(await p.getByTestId('stage-row').first().innerText()).toBe(row);

    // A link that records the seat, opened where the checkpoint is stored: seated at once.
    await openLink(p, [{ agent: 1, name, hash }]);
    expect(await p.getByTestId('checkpoint-1-name').innerText()).toBe(`checkpoint ${name}`);
    expect(await p.getByTestId('checkpoint-1-missing').count()).toBe(0);
    expect(pg.errors).toEqual([]);
    await p.context().close();
  }, 300_000);

  it('a link naming a checkpoint this browser lacks says which, refuses a folder with another hash, and seats the right one', async () => {
    const good = hfCheckpoint();
    const hash = await hfFolderHash(good.files);
    const name = `tiny-llama@${hash.slice(0, 8)}`;
    writeHfFolder(join(dir, 'link', 'tiny-llama'), good.files);
    writeHfFolder(join(dir, 'link', 'other-llama'), hfCheckpoint({ seed: 6 }).files);
    const p = await pg.freshPage();
    await openLink(p, [{ agent: 1, name, hash }]);
    expect(await p.getByTestId('notice').innerText()).toContain(`It seats checkpoint ${name} as agent 1, which this browser does not keep`);
    expect(await p.getByTestId('checkpoint-1-missing').innerText()).toContain(name);
    expect(await p.getByTestId('agent-1').innerText()).toContain('arithmetic-S#1');

    await p.getByTestId('checkpoint-1-input').setInputFiles(join(dir, 'link', 'other-llama'));
    await p.getByTestId('error').waitFor({ timeout: 60_000 });
    expect(await p.getByTestId('error').innerText()).toMatch(new RegExp(`not the checkpoint the link needs, ${name.replace('.', '\\.')} \\(hash ${hash.slice(0, 8)}…\\); pick that folder\\..*The team was not changed`, 's'));
    await settled(p);
    expect(await p.getByTestId('checkpoint-1-missing').count()).toBe(1);

    await p.getByTestId('checkpoint-1-input').setInputFiles(join(dir, 'link', 'tiny-llama'));
    await p.getByTestId('checkpoint-1-name').waitFor({ timeout: 120_000 });
    await settled(p);
    expect(await p.getByTestId('checkpoint-1-name').innerText()).toBe(`checkpoint ${name}`);
    expect(await p.getByTestId('agent-1').innerText()).toContain(`${name}#1`);
    expect(await p.getByTestId('checkpoint-1-missing').count()).toBe(0);
    expect(pg.errors).toEqual([]);
    await p.context().close();
  }, 300_000);

  it('the folder\'s files dropped on agent 1\'s card seat it (named after its config, with no folder), and a reload before any step keeps it', async () => {
    const seeded = hfCheckpoint({ seed: 9 });
    const hash = await hfFolderHash(seeded.files);
    const p = await pg.freshPage();
    await openLink(p);
    const files = [...seeded.files].map(([name, bytes]) => ({ name, b64: Buffer.from(bytes).toString('base64') }));
    await p.evaluate((list) => {
      const dt = new DataTransfer();
      for (const f of list) dt.items.add(new File([Uint8Array.from(atob(f.b64), (c) => c.charCodeAt(0))], f.name));
      const card = document.querySelector('[data-testid="agent-1"]')!;
      card.dispatchEvent(new DragEvent('dragover', { dataTransfer: dt, bubbles: true, cancelable: true }));
      card.dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
    }, files);
    await p.getByTestId('checkpoint-1-name').waitFor({ timeout: 120_000 });
    await settled(p);
    expect(await p.getByTestId('checkpoint-1-name').innerText()).toBe(`checkpoint tiny-llama@${hash.slice(0, 8)}`);
    expect(await p.getByTestId('agent-0').innerText()).toContain('arithmetic-S#0');
    // Seating wrote the fresh experiment to the autosave: a reload before any step restores it, seat and all.
    await p.goto(pg.url, { waitUntil: 'load' });
    await p.getByText(/Restored your last experiment: 0 stages/).waitFor({ timeout: 120_000 });
    await settled(p);
    expect(await p.getByTestId('checkpoint-1-name').innerText()).toBe(`checkpoint tiny-llama@${hash.slice(0, 8)}`);
    expect(pg.errors).toEqual([]);
    await p.context().close();
  }, 300_000);

  it('the card\'s quantization choice: picked before the folder it is what the seat loads as; changed after, it re-seats with the new estimate; a reload keeps it', async () => {
    const good = hfCheckpoint({ seed: 12 });
    writeHfFolder(join(dir, 'quant', 'tiny-llama'), good.files);
    const p = await pg.freshPage();
    await openLink(p);
    await seatFolder(p, join(dir, 'quant', 'tiny-llama'), 'q4');
    expect(await p.getByTestId('checkpoint-1-params').innerText()).toMatch(/base params \(frozen, q4\)/);
    const options = await p.getByTestId('checkpoint-1-quant').locator('option').allInnerTexts();
    expect(options.map((o) => o.split(' ')[0])).toEqual(['q8', 'q4', 'f32']);
    for (const o of options) expect(o).toMatch(/^(q8|q4|f32) \(needs about [\d.]+ [KM]iB\)$/);
    const needsQ4 = await p.getByTestId('checkpoint-1-needs').innerText();
    expect(needsQ4).toBe(`needs about ${/needs about ([\d.]+ [KM]iB)/.exec(options[1]!)![1]} (estimate)`);

    await p.getByTestId('checkpoint-1-quant').selectOption('f32');
    await p.getByText(/Agent 1 is now tiny-llama@[0-9a-f]{8} stored f32/).waitFor({ timeout: 120_000 });
    await settled(p);
    expect(await p.getByTestId('checkpoint-1-params').innerText()).toMatch(/\(frozen, f32\)/);
    expect(await p.getByTestId('checkpoint-1-needs').innerText()).toBe(`needs about ${/needs about ([\d.]+ [KM]iB)/.exec(options[2]!)![1]} (estimate)`);
    expect(await p.getByTestId('checkpoint-1-needs').innerText()).not.toBe(needsQ4);

    await p.goto(pg.url, { waitUntil: 'load' });
    await p.getByText(/Restored your last experiment/).waitFor({ timeout: 120_000 });
    await settled(p);
    expect(await p.getByTestId('checkpoint-1-params').innerText()).toMatch(/\(frozen, f32\)/);
    expect(await p.getByTestId('checkpoint-1-quant').inputValue()).toBe('f32');
    expect(pg.errors).toEqual([]);
    await p.context().close();
  }, 300_000);

  it('an exported experiment records the seat (name, hash, quant): opened where the checkpoint is not kept it asks for the folder and restores nothing; once the folder is picked it restores the file', async () => {
    const good = hfCheckpoint({ seed: 13 });
    const hash = await hfFolderHash(good.files);
    const name = `tiny-llama@${hash.slice(0, 8)}`;
    writeHfFolder(join(dir, 'export', 'tiny-llama'), good.files);
    const p = await pg.freshPage();
    await openLink(p);
    await seatFolder(p, join(dir, 'export', 'tiny-llama'), 'q4');
    await p.getByTestId('step-stage').click();
    await p.waitForFunction(`${rows} === 1`, undefined, { timeout: 120_000 });
    await settled(p);
    const row = await p.getByTestId('stage-row').first().innerText();
    const [download] = await Promise.all([p.waitForEvent('download'), p.getByTestId('export').click()]);
    const bytes = readFileSync(await download.path());
    const parsed = parseExperimentFile(new Uint8Array(bytes));
    if (!parsed.ok) throw new Error(parsed.error);
    expect(parsed.value.checkpoints).toEqual([{ agent: 1, name, hash, quant: 'q4' }]);
    await p.context().close();

    // Another browser, without the checkpoint: the file asks for it and restores nothing.
    const q = await pg.freshPage();
    await openLink(q);
    await q.getByTestId('import').setInputFiles({ name: 'seated.satexp', mimeType: 'application/octet-stream', buffer: bytes });
    await q.getByTestId('error').waitFor({ timeout: 120_000 });
    await settled(q);
    expect(await q.getByTestId('error').innerText()).toMatch(new RegExp(`seats agent 1's checkpoint ${name} \\(hash ${hash.slice(0, 8)}…, q4\\), which this browser does not keep: pick that folder on the agent's card and the saved steps are restored then\\. Nothing was restored yet`));
    expect(await q.getByTestId('checkpoint-1-missing').innerText()).toContain(name);
    expect(await q.evaluate(rows)).toBe(0);
    expect(await q.getByTestId('agent-1').innerText()).toContain('arithmetic-S#1');

    // The folder picked on the card as q8: not what the file ran, so the notice says to switch, and nothing is restored.
    await seatFolder(q, join(dir, 'export', 'tiny-llama'), 'q8');
    expect(await q.getByTestId('notice').innerText()).toContain(`The saved experiment is restored once it has agent 1's ${name} as q4 (it holds it as q8: choose q4 on its card).`);
    expect(await q.evaluate(rows)).toBe(0);
    // q4 chosen on the card: the file's steps are restored at once.
    await q.getByTestId('checkpoint-1-quant').selectOption('q4');
    await q.waitForFunction(`${rows} === 1`, undefined, { timeout: 120_000 });
    await settled(q);
    expect(await q.getByTestId('checkpoint-1-params').innerText()).toMatch(/\(frozen, q4\)/);
    expect(await q.getByTestId('notice').innerText()).toContain('The saved experiment is restored with its checkpoints: 1 stage.');
    expect(await q.getByTestId('error').count()).toBe(0);
    expect(await q.getByTestId('stage-row').first().innerText()).toBe(row);
    expect(await q.getByTestId('agent-1').innerText()).toContain(`${name}#1`);
    expect(pg.errors).toEqual([]);
    await q.context().close();
  }, 300_000);

  it('a plug-and-play swap of a checkpoint seat is refused by name: the card says so, and the swap\'s stage does not start', async () => {
    writeHfFolder(join(dir, 'swap', 'tiny-llama'), hfCheckpoint().files);
    const p = await pg.freshPage();
    await openLink(p, undefined, { ...cfg, swapAgent: 1, swapAt: 1, swapTo: 'M' });
    expect(await p.getByTestId('swap-checkpoint-note').count()).toBe(1);
    await seatFolder(p, join(dir, 'swap', 'tiny-llama'));
    expect(await p.getByTestId('checkpoint-1-swap').innerText()).toMatch(/swapAgent = 1, at stage 1, to M\) would replace agent 1, which holds checkpoint tiny-llama@[0-9a-f]{8}: swapping a checkpoint seat is not supported yet/);
    await p.getByTestId('step-stage').click();
    await p.getByTestId('error').waitFor({ timeout: 60_000 });
    expect(await p.getByTestId('error').innerText()).toMatch(/Stage 1 did not start: The configured plug-and-play swap/);
    await settled(p);
    expect(await p.evaluate(rows)).toBe(0);
    expect(await p.getByTestId('checkpoint-1-name').count()).toBe(1);
    await p.context().close();
  }, 300_000);

  it('Cancel during a load ends it: the notice says so and the team is as it was', async () => {
    // Big enough (about 7 M parameters, ~0.4 s to convert and quantize in Node) that the load outlasts a click.
    const big = hfCheckpoint({ d: 256, layers: 12, heads: 4, kvHeads: 2, hidden: 512, seed: 11 });
    writeHfFolder(join(dir, 'big-llama'), big.files);
    const p = await pg.freshPage();
    await openLink(p);
    const before = await p.getByTestId('agent-0').innerText();
    await p.getByTestId('checkpoint-0-input').setInputFiles(join(dir, 'big-llama'));
    await p.getByTestId('cancel').click({ timeout: 30_000 });
    await p.getByText(/Agent 0 ← big-llama@[0-9a-f]{8}: cancelled; the team was not changed\./).waitFor({ timeout: 60_000 });
    await settled(p);
    expect(await p.getByTestId('agent-0').innerText()).toBe(before);
    expect(await p.getByTestId('checkpoint-0-name').count()).toBe(0);
    expect(await p.getByTestId('error').count()).toBe(0);
    expect(pg.errors).toEqual([]);
    await p.context().close();
  }, 300_000);
});
