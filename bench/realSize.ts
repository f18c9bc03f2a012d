/**
 * `npm run bench:realsize -- [--dir DIR] [--rounds K]`: one stage of the real-size team
 * (docs/models.md "A real-size team") in the built page and in the CLI — arith-team, seed 1, the
 * `real-size` budget, the checkpoint folder DIR seated in all three agents at the default storage
 * (q8). The page: the production build opened in Debian's Chromium as the browser tests open it
 * (tests/e2e/harness.ts), the folder picked on the three agents' cards as a person picks it, then
 * Step stage, timed from the click to the stage's row in the table. The CLI: `npm run sat --
 * --budget real-size --agent-model 0=DIR … --profile`, the stage's wall time as its profile table
 * totals it. Seating and loading are left out on both sides (the page's seats are ready before the
 * click; the CLI's profile starts at the stage). Beside each wall time, the CPU time of every
 * process and thread the side ran (the page's browser processes from /proc; the CLI's own count of
 * its threads), which a loaded machine does not share out; and the stage's J, which must agree.
 * Page and CLI alternate, K rounds (default 1), the order flipped every round.
 *
 * DIR defaults to a random checkpoint with SmolLM-135M's shape (tests/helpers/hfCheckpoint.ts,
 * written once to /tmp/sat-bench-many-135m, as bench/manyAB.ts writes it).
 *
 * Not here: the stage's phases (`npm run sat -- --profile` prints them), the language stage at the
 * presets' own size (bench/page.ts --lm).
 */
import { existsSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { encodeShare, makeShareState } from '../src/app/share';
import { BUDGETS } from '../src/sat/hfSeatLimits';
import { presetConfig } from '../src/sat/presets';
import { openPlayground, ROOT, settled, type Playground } from '../tests/e2e/harness';
import { hfCheckpoint, writeHfFolder } from '../tests/helpers/hfCheckpoint';
import { childrenCpu, cliProfile, cpuTotal } from './measure';

const arg = (name: string): string | undefined => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
};
const DIR = arg('--dir') ?? '/tmp/sat-bench-many-135m';
const ROUNDS = Number(arg('--rounds') ?? 1);
const PRESET = 'arith-team';
const SEED = 1;
/** How long a seat may take to read and quantize its folder, and a stage to run, in the page. */
const SEAT_MS = 20 * 60_000;
const STAGE_MS = 30 * 60_000;

interface Side {
  readonly ms: number;
  readonly cpu: number;
  readonly j: string;
}

/** The machine's 1-, 5- and 15-minute load. */
const load = (): string => loadavg().map((x) => x.toFixed(1)).join(' ');

/** The page: a fresh context opened on the real-size experiment, DIR seated three times, one stage. */
async function pageStage(pg: Playground): Promise<Side> {
  const p = await pg.freshPage({ width: 1280, height: 800 });
  const cfg = presetConfig(PRESET, { ...BUDGETS['real-size'], seed: SEED, stages: 1 });
  await p.goto(pg.url + (await encodeShare(makeShareState(cfg, { preset: PRESET }))), { waitUntil: 'load' });
  await p.getByText(/Opened a shared experiment/).waitFor({ timeout: 300_000 });
  await settled(p);
  for (const j of [0, 1, 2]) {
    await p.getByTestId(`checkpoint-${j}-input`).setInputFiles(DIR);
    await p.getByTestId(`checkpoint-${j}-name`).waitFor({ timeout: SEAT_MS });
    await settled(p);
  }
  const cpu0 = childrenCpu();
  const t0 = Date.now();
  await p.getByTestId('step-stage').click();
  await p.waitForFunction('document.querySelectorAll(\'[data-testid="stage-row"]\').length === 1', undefined, { timeout: STAGE_MS, polling: 250 });
  const ms = Date.now() - t0;
  const cpu = cpuTotal(childrenCpu()) - cpuTotal(cpu0);
  const j = Number(await p.locator('[data-testid="stage-row"]').first().getByTestId('cell-j').getAttribute('data-value')).toFixed(3);
  await p.context().close();
  return { ms, cpu, j };
}

/** The CLI on the same experiment: its stage's profile total, its own CPU count, the stage's J. */
async function cliStage(): Promise<Side> {
  const args = ['--preset', PRESET, '--seed', String(SEED), '--stages', '1', '--budget', 'real-size'];
  for (const j of [0, 1, 2]) args.push('--agent-model', `${j}=${DIR}`);
  const r = await cliProfile(ROOT, args);
  return { ms: r.ms[0]!, cpu: r.cpu[0]!, j: Number(r.j[0]).toFixed(3) };
}

if (!existsSync(join(DIR, 'config.json'))) {
  writeHfFolder(DIR, hfCheckpoint({ vocab: 49152, d: 576, layers: 30, heads: 9, kvHeads: 3, hidden: 1536, tied: true, dtype: 'BF16', maxPositions: 2048 }).files);
}
const pg = await openPlayground();
const page: Side[] = [];
const cli: Side[] = [];
try {
  for (let r = 0; r < ROUNDS; r++) {
    for (const side of r % 2 === 0 ? ['page', 'cli'] : ['cli', 'page']) {
      const before = load();
      const s = side === 'page' ? await pageStage(pg) : await cliStage();
      (side === 'page' ? page : cli).push(s);
      console.log(`round ${r + 1} ${side}: stage 1 ${(s.ms / 1000).toFixed(1)} s wall, ${(s.cpu / 1000).toFixed(1)} s CPU, J ${s.j} (load ${before} → ${load()})`);
    }
  }
} finally {
  await pg.close();
}
console.log('\n| stage 1, real-size budget, three 135M-class seats (q8) | wall s | CPU s | J |\n|---|---:|---:|---:|');
for (const [name, xs] of [['page', page], ['CLI', cli]] as const) {
  console.log(`| ${name} | ${xs.map((s) => (s.ms / 1000).toFixed(1)).join(' / ')} | ${xs.map((s) => (s.cpu / 1000).toFixed(1)).join(' / ')} | ${xs.map((s) => s.j).join(' / ')} |`);
}
console.log(`| page ÷ CLI | ${page.map((s, i) => (s.ms / cli[i]!.ms).toFixed(2)).join(' / ')} | ${page.map((s, i) => (s.cpu / cli[i]!.cpu).toFixed(2)).join(' / ')} | ${page.every((s, i) => s.j === cli[i]!.j) ? 'equal' : 'DIFFER'} |`);
