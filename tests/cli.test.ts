/**
 * The `npm run sat` command line: a run prints one row per stage, --compare and --sweep print
 * their tables, --json writes the §9 metric keys, --export-recipe writes a real run's config, and
 * bad input exits with status 2 and a message that names the problem. Runs the real entry point in a child process.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

function sat(...args: string[]) {
  const r = spawnSync(process.execPath, ['--import', 'tsx', 'src/cli/sat.ts', ...args], { encoding: 'utf8', timeout: 120_000 });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

describe('npm run sat', () => {
  it('prints one row per stage and a summary, and writes JSON metrics', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'sat-cli-')), 'run.json');
    const r = sat('--preset', 'climbing', '--stages', '3', '--seed', '5', '--json', file);
    expect(r.code).toBe(0);
    const rows = r.out.split('\n').filter((l) => /^\s+\d+\s+-?\d+\.\d{3}/.test(l));
    expect(rows).toHaveLength(3);
    expect(r.out).toMatch(/final J -?\d+\.\d{3}/);
    const json = JSON.parse(readFileSync(file, 'utf8'));
    expect(json.stages).toHaveLength(3);
    expect(Object.keys(json.stages[0])).toEqual(expect.arrayContaining(['team/J', 'cert/lower', 'cert/held', 'agent/0/kl_q', 'order/sigma']));
    expect(json.config.seed).toBe(5);
  });

  it('--export-recipe writes the real runs, the data and reward.py; the YAML imports back; --import-log reads a run\'s log', async () => {
    const { readRecipe } = await import('../src/bridge/recipe');
    const { presetConfig } = await import('../src/sat/presets');
    const { defaultConfig } = await import('../src/sat/config');
    const dir = mkdtempSync(join(tmpdir(), 'sat-cli-'));
    const file = join(dir, 'team.sat.yaml');
    const r = sat('--preset', 'arith-team', '--set', 'delta=0.07', '--set', 'protocol=independent', '--export-recipe', file, '--hf', 'S=my-org/small');
    expect(r.code, r.err).toBe(0);
    expect(r.out).toMatch(/wrote in .*: team\.sat\.yaml, team\.verl\.sh, team\.verl\.txt, team\.teamtr\.sh, and 10 data files under team\.data\//);
    expect(r.out).toMatch(/\d+ settings have no counterpart in any engine/);
    const cfg = presetConfig('arith-team', { delta: '0.07', protocol: 'independent' });
    const back = readRecipe(readFileSync(file, 'utf8'), defaultConfig(), { models: { S: 'my-org/small', M: 'm', L: 'l' } });
    expect(back).toEqual(cfg);
    const verl = readFileSync(join(dir, 'team.verl.txt'), 'utf8').trim().split('\n');
    expect(verl).toContain('actor_rollout_ref.model.path=my-org/small');
    expect(verl).toContain(`data.train_batch_size=${cfg.batch}`);
    expect(readFileSync(join(dir, 'team.data', 'reward.py'), 'utf8')).toMatch(/^def compute_score\(data_source, solution_str, ground_truth, extra_info=None/m);
    // A chain team: the engines that cannot run it say so, and nothing of theirs is written.
    const chain = sat('--preset', 'arith-team', '--export-recipe', join(dir, 'chain.sat.yaml'));
    expect(chain.code, chain.err).toBe(0);
    expect(chain.out).toMatch(/SAT-AAMAS scripts\/train.py\): not exported — protocol: protocol chain/);
    expect(existsSync(join(dir, 'chain.sat.yaml'))).toBe(false);
    expect(existsSync(join(dir, 'chain.data', 'train.sat.jsonl'))).toBe(false);
    expect([existsSync(join(dir, 'chain.teamtr.sh')), existsSync(join(dir, 'chain.data', 'teamplay.py'))]).toEqual([true, true]);
    expect(chain.out).toMatch(/wrote in .*: chain\.verl\.sh, chain\.verl\.txt, chain\.verl-team\.py, chain\.teamtr\.sh, and 9 data files under chain\.data\/ \(4 datasets; reward\.py, teamplay\.py, teamtr_rollout\.py, sitecustomize\.py, verl_team_loop\.py\)/);
    expect(existsSync(join(dir, 'chain.verl-team.py'))).toBe(true);
    const log = sat('--import-log', join(import.meta.dirname, 'fixtures/bridge/logs/sat-trainer.log'));
    expect(log.code, log.err).toBe(0);
    expect(log.out).toMatch(/sat-trainer \(the SAT authors' trainer\), 2 steps \(1–2\), 6 metrics, 3 agents/);
    expect(log.out).toMatch(/agent 0: δ = 0\.1, violation rate 50\.0 %/);
    // A generation dump folder: its episodes, through the budgeted input check.
    const gen = sat('--import-log', join(import.meta.dirname, 'fixtures/bridge/logs/teamtr-generations'));
    expect(gen.code, gen.err).toBe(0);
    expect(gen.out).toMatch(/2\.jsonl: generation dump, 6 replies in 1 step \(2–2\), 3 agents/);
    expect(gen.out).toMatch(/step 2 agent 1 score 1\.0000\n {4}prompt ".*3\+4=<a0>7<sep><a1>\\nassistant\\n"\n {4}reply {2}"7"/);
    // One dump file: the worker tells it from a run log by its first line.
    const one = sat('--import-log', join(import.meta.dirname, 'fixtures/bridge/logs/teamtr-generations/2.jsonl'));
    expect(one.code, one.err).toBe(0);
    expect(one.out).toMatch(/2\.jsonl: generation dump, 6 replies in 1 step \(2–2\), 3 agents/);
    const bad = sat('--import-log', file);
    expect(bad.code).toBe(2);
    expect(bad.err).toMatch(/is not a run log the playground reads/);
    // A named pipe is refused before it is opened (reading it would block the CLI).
    const fifo = join(dir, 'pipe.log');
    spawnSync('mkfifo', [fifo]);
    const piped = sat('--import-log', fifo);
    expect(piped.code).toBe(2);
    expect(piped.err).toMatch(/pipe\.log is not a regular file\. Nothing was read\./);
  });

  it('--compare prints a row per variant with mean ± CI', () => {
    const r = sat('--preset', 'climbing', '--stages', '3', '--compare', 'resample,naive,simultaneous', '--seeds', '3');
    expect(r.code).toBe(0);
    for (const v of ['resample', 'naive', 'simultaneous']) expect(r.out).toMatch(new RegExp(`^${v}\\s+-?\\d+\\.\\d{3} ± \\d+\\.\\d{3}`, 'm'));
  });

  it('--sweep delta=… on delta-sweep runs the δ-sweep protocol: mean KL/δ, violation rate, exponent with a bootstrap CI', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'sat-cli-')), 'sweep.json');
    const r = sat('--preset', 'delta-sweep', '--stages', '2', '--sweep', 'delta=0.001,0.01,0.1', '--seeds', '3', '--json', file);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toMatch(/only δ changes: lr = 0\.18·√\(δ\/0\.01\), epochs 1, maxBacktracks 0/);
    for (const d of ['0.001', '0.01', '0.1']) expect(r.out).toMatch(new RegExp(`^${d.replace('.', '\\.')}\\s+\\d\\.\\d{4}\\s+\\d\\.\\d{3} ± \\d\\.\\d{3}`, 'm'));
    expect(r.out).toMatch(/scaling check: mean KL\/δ from \d\.\d{3} to \d\.\d{3}/);
    expect(r.out).toMatch(/fit violation rate ≈ c·δ\^p: p = -?\d\.\d{3}, 95% CI \[-?\d\.\d{3}, -?\d\.\d{3}\]/);
    const json = JSON.parse(readFileSync(file, 'utf8'));
    expect(json.points).toHaveLength(3);
    expect(json.protocol.seeds).toEqual([1, 2, 3]);
    expect(json.ci.lo).toBeLessThanOrEqual(json.fit.p);
    expect(json.ci.hi).toBeGreaterThanOrEqual(json.fit.p);
  });

  it('--sweep on another preset runs it at each value as it is (no lr scaling), and --fixed-lr needs a δ sweep', () => {
    const r = sat('--preset', 'relay', '--stages', '2', '--sweep', 'delta=0.001,0.01,0.1', '--seeds', '2', '--set', 'maxBacktracks=0', '--set', 'onExhausted=keep', '--set', 'certEpisodes=64');
    expect(r.code, r.err).toBe(0);
    expect(r.out).toMatch(/delta=0\.001/);
    expect(r.out).toMatch(/KL viol rate/);
    const bad = sat('--preset', 'relay', '--fixed-lr');
    expect(bad.code).toBe(2);
    expect(bad.err).toMatch(/--sqrt-delta and --fixed-lr go with --sweep delta=/);
  });

  it('--cert-estimator picks the language certificate\'s estimator for the certify report, and names the three it takes', () => {
    const small = ['--seeds', '1', '--set', 'stages=1', '--set', 'batch=2', '--set', 'group=2', '--set', 'evalEpisodes=8', '--set', 'epochs=1', '--set', 'certEpisodes=8', '--held-pairs', '8'];
    const r = sat('--certify-report', '--presets', 'arith-team', ...small, '--cert-estimator', 'mixture');
    expect(r.code, r.err).toBe(0);
    expect(r.out).toContain('Language teams: the mixture estimator, pairs of one episode of each team (docs/certificate.md §5.4)');
    // 8 episodes per agent × 3 agents in 4 rounds: rounds of 3 pairs, 6 episodes.
    expect(r.out).toMatch(/arith-team\s+1–1\s+\d+\s+\S+ \([^)]*\)\s+\S+\s+(6|12|18|24)\s/);
    // The paired estimator's units are pairs too: the same rounds of 3 pairs.
    const p = sat('--certify-report', '--presets', 'arith-team', ...small, '--cert-estimator', 'paired');
    expect(p.code, p.err).toBe(0);
    expect(p.out).toContain('Language teams: the paired estimator, one problem answered by each team with the same random numbers (docs/certificate.md §5.5)');
    expect(p.out).toMatch(/arith-team\s+1–1\s+\d+\s+\S+ \([^)]*\)\s+\S+\s+(6|12|18|24)\s/);
    const bad = sat('--certify-report', '--presets', 'arith-team', '--cert-estimator', 'balance');
    expect(bad.code).toBe(2);
    expect(bad.err).toMatch(/--cert-estimator expects truncated-is .*, mixture .* or paired .*, got balance/);
  });

  it('runs a language team from the shipped models and swaps an agent for a larger one with Stage-0', () => {
    const r = sat(
      '--preset', 'arith-pnp', '--stages', '1', '--swap', '1=arithmetic-M', '--swap-stage', '1', '--stage0', '0.05',
      '--set', 'batch=2', '--set', 'group=2', '--set', 'evalEpisodes=8', '--set', 'epochs=1', '--set', 'maxNew=3',
    );
    expect(r.code, r.err).toBe(0);
    expect(r.out).toMatch(/held-out estimate over 8 problems/);
    expect(r.out).toMatch(/swap before stage 1: agent 1 ← arithmetic-M, Stage-0 on \(δ0 = 0\.05/);
    expect(r.out).toMatch(/λ\(s\) histogram/);
    expect(r.out.split('\n').filter((l) => /^\s+1\s+\d\.\d{3}/.test(l))).toHaveLength(1);
    expect(r.out).toMatch(/hand-over: agent 1's/);
  });

  it('a tabular swap from the flags is the configured swap (same as --set swapAgent=…)', () => {
    const a = sat('--preset', 'relay', '--stages', '4', '--swap', '1=best', '--swap-stage', '3', '--stage0', '0.05');
    const b = sat('--preset', 'relay', '--stages', '4', '--set', 'swapAgent=1', '--set', 'swapAt=3', '--set', 'stage0Delta=0.05');
    expect(a.code, a.err).toBe(0);
    expect(a.out).toMatch(/swap before stage 3: agent 1 ← best response, Stage-0 on \(δ0 = 0\.05\)/);
    const rows = (out: string) => out.split('\n').filter((l) => /^\s+\d+\s+-?\d\.\d{3}/.test(l));
    expect(rows(a.out)).toHaveLength(4);
    expect(rows(a.out)).toEqual(rows(b.out));
  });

  it('bad settings and flags exit 2 with a specific message', () => {
    const cases: [string[], RegExp][] = [
      [["--set", "delta=abc"], /Setting "delta" = "abc" is not a number; expected a number in \[1e-6, 10\]/],
      [['--set', 'detla=0.1'], /Unknown setting "detla"\. Did you mean "delta"\?/],
      [['--set', 'order=custom', '--set', 'customOrder=0,0,1'], /customOrder.*not a permutation/],
      [['--hf', 'X=org/model', '--export-recipe', 'never-written.yaml'], /--hf maps the zoo's sizes S, M and L to Hugging Face ids, got "X"/],
      [['--preset', 'nope'], /Unknown preset "nope"/],
      [['--frobnicate'], /Unknown flag --frobnicate/],
      [['--stages', '0'], /"stages" = "0" is out of range/],
      [['--set', 'task=arithmetic', '--set', 'model=L', '--set', 'task=countdown'], /"model" = "L" is not shipped for task "countdown"/],
      [['--preset', 'arith-pnp', '--swap', '1=arithmetic-XL', '--stages', '1', '--set', 'evalEpisodes=8'], /"swapTo" = "XL" is not an allowed choice; expected one of best, S, M, L/],
      [['--preset', 'arith-pnp', '--swap', '1=countdown-M', '--swap-stage', '1', '--stages', '1'], /--swap names countdown-M, but the task is arithmetic/],
      [['--preset', 'relay', '--swap', '5=best'], /"swapAgent" = 5 names no agent/],
    ];
    for (const [args, msg] of cases) {
      const r = sat(...args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.err).toMatch(msg);
    }
  });
});
