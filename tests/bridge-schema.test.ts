/**
 * Every export held against the engines' own rules (tests/helpers/engineSchemas.ts, from the key
 * lists and checks read out of verl, TeamTR and the SAT authors' trainer, fixtures citing each
 * file and commit): for every preset, each engine's export either passes — no unknown or
 * misspelled key, every mandatory key set, values the engine accepts, sizes its checks allow —
 * or is refused with the setting named. The checker itself is shown to fail on broken exports.
 */
import { describe, expect, it } from 'vitest';
import { isLlmTask, parseConfig, type Config } from '../src/sat/config';
import { PRESETS, presetConfig } from '../src/sat/presets';
import { CONFIG_KEYS } from '../src/sat/config';
import { DEFAULT_MODELS, recipe, recipeEntry, recipeSummary, type EngineExport } from '../src/bridge/recipe';
import { checkSatTrainer, checkTeamtr, checkVerl, CHECKS, SAT_KEYS, TEAMTR_ADDITIONS, TEAMTR_KEYS, VERL_KEYS } from './helpers/engineSchemas';

const llm = PRESETS.filter((p) => p.kind === 'llm').map((p) => p.name);

/** A preset made runnable by every engine: independent protocol, fixed order, no swap. */
function runnable(name: string, over: Record<string, unknown> = {}): Config {
  return parseConfig({ ...presetConfig(name), protocol: 'independent', order: 'fixed', swapAgent: -1, ...over });
}

function problems(cfg: Config, e: EngineExport, files: ReadonlySet<string>): string[] {
  if (!e.ok) return [];
  if (e.engine === 'verl') return checkVerl(e.overrides);
  if (e.engine === 'teamtr') return checkTeamtr(e.overrides, cfg.agents);
  return checkSatTrainer(e.files[0]!.text, files);
}

function check(cfg: Config) {
  const r = recipe(cfg, DEFAULT_MODELS, 1, 'x.sat.yaml');
  const files = new Set(r.files.map((f) => f.path));
  for (const e of Object.values(r.engines)) {
    if (e.ok) expect(problems(cfg, e, files), `${e.engine}`).toEqual([]);
    else for (const x of e.refused) expect(x.message, `${e.engine} refusal of ${x.setting}`).toMatch(/\S+( \S+){5,}/);
  }
  return r;
}

describe('the engines\' key lists are read from their code', () => {
  it('each fixture cites its repository and commit, and holds the keys the export writes', () => {
    for (const k of [VERL_KEYS, TEAMTR_KEYS, SAT_KEYS]) {
      expect(k.repository).toMatch(/^[\w-]+\/[\w-]+$/);
      expect(k.commit).toMatch(/^[0-9a-f]{40}$/);
    }
    expect(VERL_KEYS.keys['actor_rollout_ref.rollout.name']).toBe('???');
    expect(VERL_KEYS.keys['actor_rollout_ref.actor.ppo_mini_batch_size']).toBe(256);
    expect(VERL_KEYS.keys['actor_rollout_ref.rollout.tensor_model_parallel_size']).toBe(2);
    expect(VERL_KEYS.keys['actor_rollout_ref.model.lora_rank']).toBe(0);
    expect(SAT_KEYS.keys['sat.scheduler.mode'].options).toEqual(['static', 'random', 'greedy_info_gain']);
    expect(CHECKS.model_heads['HuggingFaceTB/SmolLM2-135M-Instruct'].num_attention_heads).toBe(9);
  });

  it('every key the mapping table (docs/real-run.md) names is one of that engine\'s keys', () => {
    const teamtr = new Set([...Object.keys(TEAMTR_KEYS.keys), ...Object.keys(TEAMTR_ADDITIONS.in_config)]);
    for (const k of CONFIG_KEYS) {
      const e = recipeEntry(k);
      if (e.verl) expect(Object.keys(VERL_KEYS.keys), `${k} → verl ${e.verl}`).toContain(e.verl);
      if (e.teamtr) expect(teamtr.has(e.teamtr), `${k} → TeamTR ${e.teamtr}`).toBe(true);
      if (e.satTrainer) expect(Object.keys(SAT_KEYS.keys), `${k} → SAT trainer ${e.satTrainer}`).toContain(e.satTrainer);
    }
  });
});

describe('every preset\'s export passes the engine\'s checks or is refused by name', () => {
  it.each(PRESETS.map((p) => p.name))('%s as it is', (name) => {
    const cfg = presetConfig(name);
    const r = check(cfg);
    if (!isLlmTask(cfg.task)) for (const e of Object.values(r.engines)) expect(e.ok ? '' : e.refused.map((x) => x.setting).join(), e.engine).toBe('task');
    else expect(r.engines.verl.ok || r.engines.verl.refused.some((x) => x.setting === 'swapAgent')).toBe(true);
  });

  it.each(llm)('%s with protocol independent and order fixed: every engine exports (countdown: not to the SAT authors\' built-in reward)', (name) => {
    const cfg = runnable(name);
    const r = check(cfg);
    expect(r.engines.verl.ok).toBe(true);
    expect(r.engines.teamtr.ok).toBe(true);
    if (cfg.task === 'arithmetic') expect(r.engines.satTrainer.ok).toBe(true);
    else expect(r.engines.satTrainer.ok ? [] : r.engines.satTrainer.refused.map((x) => x.setting)).toEqual(['task']);
  });

  it('variants: LoRA, DrGRPO, the token objective, a mixed team, greedy / reverse / custom orders, an ONNX swap, vote and router', () => {
    const lora = check(runnable('arith-team', { lora: 8, loraAlpha: 16 }));
    const v = lora.engines.verl.ok ? lora.engines.verl.overrides : [];
    expect(v).toEqual(expect.arrayContaining(['actor_rollout_ref.model.lora_rank=8', 'actor_rollout_ref.model.lora_alpha=16', 'actor_rollout_ref.model.target_modules=all-linear', 'actor_rollout_ref.rollout.load_format=safetensors']));
    const dr = check(runnable('arith-team', { objective: 'token', tokenAgg: 'dr_grpo' }));
    const d = dr.engines.verl.ok ? dr.engines.verl.overrides : [];
    expect(d).toEqual(expect.arrayContaining(['actor_rollout_ref.actor.loss_agg_mode=seq-mean-token-sum-norm', 'actor_rollout_ref.actor.use_kl_loss=false', 'algorithm.norm_adv_by_std_in_grpo=false', 'actor_rollout_ref.actor.policy_loss.loss_mode=vanilla']));
    const seq = check(runnable('arith-team'));
    expect(seq.engines.verl.ok && seq.engines.verl.overrides).toContain('actor_rollout_ref.actor.policy_loss.loss_mode=gspo');
    expect(seq.engines.teamtr.ok && seq.engines.teamtr.overrides).toContain('actor_rollout_ref.actor.policy_loss.loss_mode=geo_mean');
    const mixed = check(runnable('arith-team', { agentModels: ['S', 'M', 'L'] }));
    expect(mixed.engines.teamtr.ok && mixed.engines.teamtr.overrides).toContain(`actor_rollout_ref.rollout.agent_model_paths=['${DEFAULT_MODELS.S}','${DEFAULT_MODELS.M}','${DEFAULT_MODELS.L}']`);
    for (const order of ['greedy', 'reverse', 'random'] as const) {
      const r = check(runnable('arith-team', { order }));
      expect(r.engines.teamtr.ok ? [] : r.engines.teamtr.refused.map((x) => x.setting)).toEqual(['order']);
      if (order === 'random') expect(r.engines.satTrainer.ok).toBe(true);
      else expect(r.engines.satTrainer.ok ? [] : r.engines.satTrainer.refused.map((x) => x.setting)).toEqual(['order']);
    }
    const custom = check(runnable('arith-team', { order: 'custom', customOrder: [2, 0, 1] }));
    expect(custom.engines.satTrainer.ok ? '' : custom.engines.satTrainer.refused[0]!.message).toMatch(/order custom: .*static, random and greedy_info_gain/);
    // A seat swapped to an ONNX folder: each engine names swapTo onnx and why (no checkpoint to load), none throws.
    const onnx = check(runnable('arith-team', { swapAgent: 1, swapTo: 'onnx' }));
    expect(onnx.engines.satTrainer.ok ? [] : onnx.engines.satTrainer.refused.map((x) => x.setting)).toEqual(['swapTo']);
    for (const e of [onnx.engines.verl, onnx.engines.teamtr]) expect(e.ok ? [] : e.refused.map((x) => x.setting), e.engine).toEqual(['swapAgent', 'swapTo']);
    for (const e of Object.values(onnx.engines)) expect(e.ok ? '' : e.refused.find((x) => x.setting === 'swapTo')!.message, e.engine).toMatch(/^swapTo onnx: .*ONNX folder.*inference export.*checkpoint.*swapTo = S, M or L/);
    expect(check(runnable('arith-team', { swapAgent: 1, swapTo: 'M' })).engines.satTrainer.ok).toBe(true);
    for (const protocol of ['chain', 'vote', 'router'] as const) {
      const r = check(runnable('arith-team', { protocol }));
      // TeamTR plays chain through the exported rollout (tests/bridge-chain.test.ts); vote and router nowhere.
      const refusers = protocol === 'chain' ? [r.engines.satTrainer] : [r.engines.satTrainer, r.engines.teamtr];
      for (const e of refusers) expect(e.ok ? [] : e.refused.map((x) => x.setting), `${e.engine} ${protocol}`).toEqual(['protocol']);
      expect(r.engines.teamtr.ok).toBe(protocol === 'chain');
      expect(r.engines.verl.ok).toBe(true);
    }
  });
});

describe('what an engine runs differently is said with its export', () => {
  const settings = (e: EngineExport) => (e.ok ? e.differs.map((d) => d.setting) : []);
  it('each written engine names the settings it computes differently, in its summary and in its file', () => {
    const r = check(runnable('arith-team'));
    expect(settings(r.engines.satTrainer)).toEqual(['rewardMode', 'epochs', 'onExhausted', 'retryLrFactor', 'betaAdapt', 'maxNew']);
    // Its built-in reward reads the last number of a reply: extract mode is what it runs.
    expect(settings(check(runnable('arith-team', { rewardMode: 'extract' })).engines.satTrainer)).not.toContain('rewardMode');
    expect(settings(r.engines.verl)).toEqual(['delta', 'aClip', 'maxNew', 'objective', 'beta', 'agents']);
    expect(settings(r.engines.teamtr)).toEqual(['delta', 'aClip', 'maxNew', 'objective', 'beta', 'group']);
    expect(r.engines.teamtr.ok && r.engines.teamtr.overrides).toContain('data.shuffle=false');
    for (const e of Object.values(r.engines)) {
      if (!e.ok) continue;
      for (const d of e.differs) {
        expect(CONFIG_KEYS, e.engine).toContain(d.setting);
        expect(d.message).toMatch(/\S+( \S+){5,}/);
        expect(e.files[0]!.text, `${e.engine} file names ${d.setting}`).toContain(`#   ${d.setting}: ${d.message}`);
        expect(recipeSummary(r), `${e.engine} summary names ${d.setting}`).toContain(`  runs differently — ${d.setting}: ${d.message}`);
      }
    }
    // Settings the SAT authors' trainer has no key for are said when they leave its fixed choice.
    const odd = check(runnable('arith-team', { epsHigh: 0.28, topK: 5, formatReward: 0.1, lora: 8, loraAlpha: 16, objective: 'token', epochs: 1, onExhausted: 'keep', retryLrFactor: 1, deltas: [0.1, 0.2, 0.3] }));
    expect(settings(odd.engines.satTrainer)).toEqual(['epsHigh', 'objective', 'topK', 'formatReward', 'rewardMode', 'lora', 'betaAdapt', 'deltas', 'maxNew']);
    const dr = check(runnable('arith-team', { objective: 'token', tokenAgg: 'dr_grpo' }));
    expect(dr.engines.verl.ok && dr.engines.verl.differs.find((d) => d.setting === 'beta')!.message).toMatch(/no KL loss \(use_kl_loss=false\)/);
  });
});

describe('the checker fails broken exports (it can fail)', () => {
  const r = recipe(runnable('arith-team'), DEFAULT_MODELS, 1, 'x.sat.yaml');
  const verl = r.engines.verl.ok ? [...r.engines.verl.overrides] : [];
  const teamtr = r.engines.teamtr.ok ? [...r.engines.teamtr.overrides] : [];
  const files = new Set(r.files.map((f) => f.path));
  const without = (xs: string[], prefix: string) => xs.filter((x) => !x.startsWith(prefix));
  const replace = (xs: string[], prefix: string, line: string) => [...without(xs, prefix), line];

  it('verl: a misspelled key, no rollout.name, no micro-batch size, a mini-batch over the batch, TP not dividing the heads, an unknown loss', () => {
    expect(checkVerl(verl)).toEqual([]);
    expect(checkVerl([...verl, 'actor_rollout_ref.actor.clip_ratio_lo=0.2'])).toContain('verl: unknown key actor_rollout_ref.actor.clip_ratio_lo');
    expect(checkVerl(without(verl, 'actor_rollout_ref.rollout.name='))).toContain('verl: actor_rollout_ref.rollout.name is mandatory (??? in the packaged config) and not set');
    expect(checkVerl(without(verl, 'actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu='))).toContain('verl: exactly one of actor.ppo_micro_batch_size / _per_gpu must be set');
    expect(checkVerl(without(verl, 'actor_rollout_ref.actor.ppo_mini_batch_size='))).toContain('verl: train_batch_size (16) must be >= actor.ppo_mini_batch_size (256)');
    expect(checkVerl(replace(verl, 'actor_rollout_ref.rollout.tensor_model_parallel_size=', 'actor_rollout_ref.rollout.tensor_model_parallel_size=2'))).toEqual(
      expect.arrayContaining(['verl: vLLM: total number of attention heads (9) of HuggingFaceTB/SmolLM2-135M-Instruct must be divisible by tensor parallel size (2)']),
    );
    expect(checkVerl(replace(verl, 'actor_rollout_ref.actor.loss_agg_mode=', 'actor_rollout_ref.actor.loss_agg_mode=seq-mean'))).toContain('verl: loss_agg_mode seq-mean is not accepted');
    expect(checkVerl(replace(verl, 'trainer.n_gpus_per_node=', 'trainer.n_gpus_per_node=3')).join('\n')).toMatch(/must be divisible by n_gpus \(3\)/);
  });

  it('TeamTR: gspo (absent from its verl), a wrong team size, a + key it does not read', () => {
    expect(checkTeamtr(teamtr, 3)).toEqual([]);
    expect(checkTeamtr(replace(teamtr, 'actor_rollout_ref.actor.policy_loss.loss_mode=', 'actor_rollout_ref.actor.policy_loss.loss_mode=gspo'), 3)).toContain('TeamTR: policy_loss.loss_mode gspo is not registered');
    expect(checkTeamtr(teamtr, 2).join('\n')).toMatch(/agent_model_paths must list the 2 agents/);
    expect(checkTeamtr([...teamtr, '+teamtr_order=2'], 3)).toContain('TeamTR: unknown key +teamtr_order');
    expect(checkTeamtr([...teamtr, '+teamtr_target_agent_id=1'], 3)).toEqual([]);
  });

  it('the SAT authors\' trainer: mode fixed, keys it never reads, no dataset, an adv_mode it does not know, a batch of no whole group', () => {
    const y = r.yaml!;
    expect(checkSatTrainer(y, files)).toEqual([]);
    expect(checkSatTrainer(y.replace('mode: static', 'mode: fixed'), files)).toContain('SAT trainer: sat.scheduler.mode = "fixed" is none of static, random, greedy_info_gain');
    expect(checkSatTrainer(y.replace('  epsilon: 0.2', '  epsilon: 0.2\n  protocol: chain'), files)).toContain('SAT trainer: sat.protocol is never read by its code');
    expect(checkSatTrainer(y.replace(/dataset:\n.*\n.*\n/, ''), files)).toContain('SAT trainer: dataset.train_path is required');
    expect(checkSatTrainer(y.replace('adv_mode: grpo', 'adv_mode: resample'), files)).toContain('SAT trainer: sat.adv_mode = "resample" is none of grpo, gae');
    expect(checkSatTrainer(y.replace('train_batch_size: 128', 'train_batch_size: 130'), files).join('\n')).toMatch(/not a multiple of sat.group_size \(8\): 2 episodes would be dropped/);
    expect(checkSatTrainer(y.replace(/path: HuggingFaceTB\/SmolLM2-135M-Instruct/, 'path: tabular:climbing'), files).join('\n')).toMatch(/sat.agents\[0\].path "tabular:climbing" is not a loadable model/);
  });
});

describe('an export writes only what its engines run, under names that match', () => {
  it('each engine\'s data rows only when it exports, reward.py for verl or TeamTR, the verl overrides beside its script', () => {
    const cases = [...llm.map((n) => presetConfig(n)), ...llm.map((n) => runnable(n)), runnable('arith-team', { norm: 'batch' }), presetConfig('arith-team', { order: 'random', protocol: 'independent' })];
    const seen = new Set<string>();
    for (const cfg of cases) {
      const r = recipe(cfg, DEFAULT_MODELS, 1, 'runs/x.sat.yaml');
      const paths = r.files.map((f) => f.path);
      const ok = { satTrainer: r.engines.satTrainer.ok, verl: r.engines.verl.ok, teamtr: r.engines.teamtr.ok };
      seen.add(JSON.stringify(ok));
      const has = (p: string) => paths.includes(p);
      expect([has('x.sat.yaml'), has('x.data/train.sat.jsonl'), has('x.data/test.sat.jsonl')], `${cfg.task} ${cfg.protocol}: SAT trainer ${ok.satTrainer}`).toEqual([ok.satTrainer, ok.satTrainer, ok.satTrainer]);
      expect([has('x.verl.sh'), has('x.verl.txt'), has('x.data/train.verl.jsonl'), has('x.data/val.verl.jsonl')]).toEqual([ok.verl, ok.verl, ok.verl, ok.verl]);
      expect([has('x.teamtr.sh'), has('x.data/train.teamtr.jsonl'), has('x.data/val.teamtr.jsonl')]).toEqual([ok.teamtr, ok.teamtr, ok.teamtr]);
      expect(has('x.data/reward.py')).toBe(ok.verl || ok.teamtr);
      expect(paths.some((p) => p.includes('.sat.yaml.'))).toBe(false);
      if (r.engines.verl.ok) expect(r.files.find((f) => f.path === 'x.verl.txt')!.text).toBe(`${r.engines.verl.overrides.join('\n')}\n`);
      // Without data (the page's panel), the engines' own files only.
      expect(recipe(cfg, DEFAULT_MODELS, 1, 'runs/x.sat.yaml', { data: false }).files.some((f) => f.path.startsWith('x.data/'))).toBe(false);
    }
    // The cases cover an engine refused beside engines that export.
    expect(seen.size).toBeGreaterThan(2);
  });
});
