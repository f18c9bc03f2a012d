/**
 * `npm run claims`: run the five claims of docs/method.md §10b (src/studies/claims.ts) and write the
 * report (docs/claims.md, docs/claims/claim-N.svg, src/app/claims/data.json). `--only 2,3` reruns
 * those and keeps the others' data; `--quick` is the seconds-long format check, written to a temp
 * folder or `--out DIR`, never over the committed report; `--render` rewrites the markdown and SVGs
 * from the data, running nothing. Progress to stderr, one line per claim to stdout.
 *
 * Not here: what a claim runs or how its verdict is decided (src/studies/claims.ts), the SVG and
 * markdown (claimsReport.ts).
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { CLAIM_IDS, type ClaimResult, type ClaimScale, type ClaimsReport, runClaim } from '../studies/claims';
import { claimSvg, claimsMarkdown, svgName } from './claimsReport';
import { type FlagSpec, readFlags, runCommand, UsageError } from './flags';
import { loadFromDisk } from './models';

const USAGE = 'Usage: npm run claims -- [--quick] [--only 1,2,…] [--out DIR] [--render] [--quiet]';


const FLAGS = { quick: { type: 'boolean' }, render: { type: 'boolean' }, only: { type: 'string' }, out: { type: 'string' }, quiet: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } } as const satisfies FlagSpec;

interface Args {
  scale: ClaimScale;
  only: number[];
  out?: string;
  quiet: boolean;
  render: boolean;
}

function readArgs(argv: string[]): Args {
  const a: Args = { scale: 'full', only: [...CLAIM_IDS], quiet: false, render: false };
  for (const { name, value } of readFlags(argv, FLAGS, (m) => new UsageError(m))) {
    switch (name as keyof typeof FLAGS) {
      case 'quick': a.scale = 'quick'; break;
      case 'quiet': a.quiet = true; break;
      case 'render': a.render = true; break;
      case 'out': a.out = value!; break;
      case 'only': {
        const ids = value!.split(',').map((s) => Number(s.trim()));
        const bad = ids.filter((x) => !(CLAIM_IDS as readonly number[]).includes(x));
        if (ids.length === 0 || bad.length) throw new UsageError(`--only takes claim numbers among ${CLAIM_IDS.join(', ')}, got ${value}`);
        a.only = [...new Set(ids)].sort();
        break;
      }
      case 'help': console.log(USAGE); process.exit(0);
    }
  }
  return a;
}

/** Where the three outputs go. */
interface ReportPaths {
  readonly markdown: string;
  readonly svgDir: string;
  readonly data: string;
}

const COMMITTED: ReportPaths = { markdown: 'docs/claims.md', svgDir: 'docs/claims', data: 'src/app/claims/data.json' };

function pathsIn(dir: string): ReportPaths {
  return { markdown: join(dir, 'claims.md'), svgDir: join(dir, 'claims'), data: join(dir, 'data.json') };
}

/** An existing data file at this scale (to keep the claims not rerun), or null. */
function previous(path: string, scale: ClaimScale): ClaimsReport | null {
  if (!existsSync(path)) return null;
  const r = JSON.parse(readFileSync(path, 'utf8')) as ClaimsReport;
  return r.format === 'sat-claims/1' && r.scale === scale ? r : null;
}

/** Writes the report's three outputs (module comment). */
function writeReport(report: ClaimsReport, paths: ReportPaths): void {
  mkdirSync(paths.svgDir, { recursive: true });
  mkdirSync(dirname(paths.data), { recursive: true });
  for (const c of report.claims) writeFileSync(join(paths.svgDir, svgName(c)), claimSvg(c.plot));
  writeFileSync(paths.data, JSON.stringify(report, null, 1) + '\n');
  const from = dirname(paths.markdown);
  writeFileSync(paths.markdown, claimsMarkdown(report, { svgDir: relative(from, paths.svgDir) || '.', dataPath: relative(from, paths.data), seconds: report.seconds }));
}

async function main(): Promise<void> {
  const args = readArgs(process.argv.slice(2));
  if (args.render && args.scale === 'quick' && !args.out) throw new UsageError('--render --quick needs --out DIR: a quick report lives where it was written');
  const paths = args.out ? pathsIn(args.out) : args.scale === 'quick' ? pathsIn(mkdtempSync(join(tmpdir(), 'sat-claims-quick-'))) : COMMITTED;
  const progress = (msg: string) => {
    if (!args.quiet && process.stderr.isTTY) process.stderr.write(`\r${msg}\x1b[K`);
  };
  if (args.render) {
    const r = previous(paths.data, args.scale);
    if (!r) throw new UsageError(`--render: ${paths.data} holds no ${args.scale} report to render; run npm run claims${args.scale === 'quick' ? ' -- --quick' : ''} first`);
    writeReport(r, paths);
    console.log(`rewrote ${paths.markdown} and ${paths.svgDir}/claim-*.svg from ${paths.data} (${r.claims.length} claims), running nothing`);
    return;
  }
  const seconds: Record<number, number> = {};
  const fresh: ClaimResult[] = [];
  for (const id of args.only) {
    const t0 = performance.now();
    const r = await runClaim(id, args.scale, { load: loadFromDisk, onProgress: (done, total, what) => progress(`claim ${id}: ${what} (${done}/${total})`) });
    seconds[id] = Math.round((performance.now() - t0) / 100) / 10;
    progress('');
    fresh.push(r!);
    console.log(`claim ${id} (${r!.title}): ${r!.verdict} — ${seconds[id]!.toFixed(0)} s`);
  }
  // Read only now, so that a run of other claims that finished meanwhile is kept too.
  const before = previous(paths.data, args.scale);
  const kept = (before?.claims ?? []).filter((c) => !args.only.includes(c.id));
  const claims = [...kept, ...fresh].sort((a, b) => a.id - b.id);
  writeReport({ format: 'sat-claims/1', scale: args.scale, claims, seconds: { ...before?.seconds, ...seconds } }, paths);
  console.log(`wrote ${paths.markdown}, ${paths.svgDir}/claim-*.svg and ${paths.data} (${claims.length} claims, scale ${args.scale})`);
}

runCommand(main, USAGE);
