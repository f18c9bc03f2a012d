/**
 * The chain protocol on a real engine (src/bridge/teamPy.ts): python3 drives the exported
 * teamplay.py the way the exported TeamTR rollout does — the batch laid out as the export writes
 * it and the trainer repeats it (per problem, each agent's row `group` times), grouped into
 * episodes by `episodes_of_rows`, played turn by turn by `play` — with a scripted stand-in model
 * (a hash of the context picks its reply), and every context, every message and the team reward
 * reward.py gives through `compute_score` (as TeamTR's reward manager calls it) must equal what
 * src/tasks/llm/protocols.ts `nextTurn` / `teamVerdict` give for the same episode, on ≥ 1,000
 * episodes of each chain preset in both reward modes. A shuffled batch is refused by name. The
 * hook (sitecustomize.py) and the rollout class itself (with torch, when a python3 has it) run on
 * stand-ins for TeamTR's packages.
 * What this cannot check (the models, TeamTR's trainer): docs/real-run.md.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Rng } from '../src/core/rng';
import { presetConfig } from '../src/sat/presets';
import { LLM_TASKS, nextTurn, teamVerdict, type LlmTaskName, type Message } from '../src/tasks/llm/index';
import { hashString } from '../src/tasks/llm/types';
import { rewardModule } from '../src/bridge/rewardPy';
import { dataSource, groundTruth, promptText } from '../src/bridge/taskData';
import { withRewardMode, type RewardMode } from '../src/bridge/answer';
import { siteCustomizeModule, teamplayModule, teamtrRolloutModule } from '../src/bridge/teamPy';
import { recipe, DEFAULT_MODELS } from '../src/bridge/recipe';
import { candidates, FNV_PY, TEAMTR_STUBS as STUBS } from './helpers/chainStandIn';

/** The Python side: lays out the rows, plays them with the stand-in, grades each episode. */
const DRIVER = String.raw`
import json, sys
import reward, teamplay

${FNV_PY}
job = json.load(sys.stdin)
G = job["group"]
prompts, agents, where = [], [], []
for c, p in enumerate(job["problems"]):
    for a in range(teamplay.N_AGENTS):
        for s in range(G):
            prompts.append(p["prompt"]); agents.append(a); where.append((c, s))
if job.get("shuffle"):
    prompts.reverse(); agents.reverse(); where.reverse()

def generate(agent, rows, contexts):
    out = []
    for r, ctx in zip(rows, contexts):
        c, s = where[r]
        cands = job["problems"][c]["candidates"]
        out.append(cands[fnv("%d:%d|%s" % (c, s, ctx)) % len(cands)])
    return out

try:
    episodes = teamplay.episodes_of_rows(agents, prompts)
except ValueError as e:
    print(json.dumps({"error": str(e)})); sys.exit(0)
contexts, texts = teamplay.play(prompts, agents, episodes, generate)
result = []
for ep in episodes:
    c, s = where[ep[0]]
    rec = teamplay.team_record(ep, texts)
    extra = {"rollout_reward_scores": {"team": rec}}
    rewards = [reward.compute_score(reward.DATA_SOURCE, texts[r], job["problems"][c]["ground_truth"], extra) for r in ep]
    result.append({"c": c, "s": s, "agents": [agents[r] for r in ep], "contexts": [contexts[r] for r in ep], "texts": [texts[r] for r in ep], "rewards": rewards})
print(json.dumps({"episodes": result}))
`;

interface Played {
  c: number;
  s: number;
  agents: number[];
  contexts: string[];
  texts: string[];
  rewards: number[];
}

function runPython(files: Record<string, string>, job: unknown): { episodes?: Played[]; error?: string } {
  const dir = mkdtempSync(join(tmpdir(), 'sat-chain-'));
  for (const [f, text] of Object.entries(files)) writeFileSync(join(dir, f), text);
  writeFileSync(join(dir, 'driver.py'), DRIVER);
  const r = spawnSync('python3', ['driver.py'], { cwd: dir, input: JSON.stringify(job), encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
  if (r.error) throw new Error(`python3 could not be run (${r.error.message}); the chain parity test needs python3 on the PATH.`);
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout);
}

describe('teamplay.py plays the chain protocol exactly as protocols.ts does', () => {
  it.each([
    { preset: 'arith-team', problems: 130, mode: 'strict' as RewardMode },
    { preset: 'arith-team', problems: 130, mode: 'extract' as RewardMode },
    { preset: 'plan-team', problems: 260, mode: 'strict' as RewardMode },
    { preset: 'plan-team', problems: 260, mode: 'extract' as RewardMode },
    { preset: 'plan-team-2', problems: 260, mode: 'strict' as RewardMode },
    { preset: 'plan-team-2', problems: 260, mode: 'extract' as RewardMode },
  ])('$preset, rewardMode $mode: every context, message and team reward of ≥ 1,000 episodes', ({ preset, problems, mode }) => {
    const cfg = presetConfig(preset, { rewardMode: mode });
    expect(cfg.protocol).toBe('chain');
    const name = cfg.task as LlmTaskName;
    const task = withRewardMode(LLM_TASKS[name].make({ seed: cfg.taskSeed, level: cfg.level, formatReward: cfg.formatReward }), mode);
    const rng = new Rng(cfg.agents * 31 + problems, [mode.length]);
    const probs = Array.from({ length: problems }, (_, i) => {
      const p = task.generate('train', i);
      return { p: { ...p, prompt: promptText(name, p, mode) }, candidates: candidates(p, rng) };
    });
    const job = { group: cfg.group, problems: probs.map(({ p, candidates: cands }) => ({ prompt: p.prompt, ground_truth: groundTruth(name, p), candidates: cands })) };
    const files = { 'reward.py': rewardModule(name, cfg.formatReward, mode), 'teamplay.py': teamplayModule('chain', cfg.agents) };
    const got = runPython(files, job).episodes!;
    expect(got.length).toBe(problems * cfg.group);
    expect(got.length).toBeGreaterThanOrEqual(1000);
    const rewards = new Set<number>();
    for (const e of got) {
      const { p, candidates: cands } = probs[e.c]!;
      const spec = { protocol: 'chain' as const, nAgents: cfg.agents };
      const messages: Message[] = [];
      const contexts: string[] = [];
      for (let slots = nextTurn(spec, p, messages); slots.length > 0; slots = nextTurn(spec, p, messages)) {
        for (const slot of slots) {
          contexts.push(slot.context);
          messages.push({ turn: slot.turn, agent: slot.agent, text: cands[hashString(`${e.c}:${e.s}|${slot.context}`) % cands.length]! });
        }
      }
      const want = teamVerdict(spec, task, p, messages).reward;
      rewards.add(want);
      expect({ agents: e.agents, contexts: e.contexts, texts: e.texts }, `problem ${e.c} sample ${e.s}`).toEqual({ agents: messages.map((m) => m.agent), contexts, texts: messages.map((m) => m.text) });
      expect(e.rewards, `problem ${e.c} sample ${e.s}`).toEqual(Array(cfg.agents).fill(want));
    }
    // Not trivial: later agents saw earlier messages, and the team both earned and missed reward.
    expect(got.some((e) => e.contexts[2]!.includes('<a1>') && e.contexts[2]!.includes('<sep>'))).toBe(true);
    expect(rewards.has(1) && rewards.has(0)).toBe(true);
  });

  it('a batch not in the exported order is refused by name, not played wrong', () => {
    const cfg = presetConfig('arith-team');
    const p = LLM_TASKS.arithmetic.make({ seed: 1, level: 1 }).generate('train', 0);
    const job = { group: 2, shuffle: true, problems: [{ prompt: `x${p.prompt}`, ground_truth: groundTruth('arithmetic', p), candidates: ['1'] }, { prompt: p.prompt, ground_truth: groundTruth('arithmetic', p), candidates: ['1'] }] };
    const r = runPython({ 'reward.py': rewardModule('arithmetic', 0), 'teamplay.py': teamplayModule('chain', cfg.agents) }, job);
    expect(r.error).toMatch(/not one problem answered by agents 0\.\.2 in turn with equal samples: read the rows in file order \(data\.shuffle=false\)/);
  });

  it('the chain presets export to TeamTR with the module, its rollout and the hook; every file compiles', () => {
    for (const preset of ['arith-team', 'plan-team', 'plan-team-2']) {
      const r = recipe(presetConfig(preset), DEFAULT_MODELS, 1, `${preset}.sat.yaml`);
      expect(r.engines.teamtr.ok, preset).toBe(true);
      const paths = r.files.map((f) => f.path);
      for (const f of ['teamplay.py', 'teamtr_rollout.py', 'sitecustomize.py', 'reward.py', 'train.teamtr.jsonl']) expect(paths, preset).toContain(`${preset}.data/${f}`);
      const script = r.files.find((f) => f.path === `${preset}.teamtr.sh`)!.text;
      expect(script).toContain('export PYTHONPATH="$DATA:$TEAMTR${PYTHONPATH:+:$PYTHONPATH}"');
      expect(script).toMatch(/#\s+estimator: every agent is updated from the same step's/);
      const rows = r.files.find((f) => f.path === `${preset}.data/train.teamtr.jsonl`)!.text.trim().split('\n').slice(0, 6).map((l) => JSON.parse(l));
      expect(rows.map((x) => [x.agent_id, x.turn_id, x.conversation_id])).toEqual([[0, 0, 0], [1, 1, 0], [2, 2, 0], [0, 0, 1], [1, 1, 1], [2, 2, 1]]);
      expect(rows[0].context).toBe(rows[1].context);
    }
    const dir = mkdtempSync(join(tmpdir(), 'sat-chain-'));
    const files = { 'teamplay.py': teamplayModule('chain', 3), 'teamtr_rollout.py': teamtrRolloutModule(), 'sitecustomize.py': siteCustomizeModule(), 'reward.py': rewardModule('countdown', 0) };
    for (const [f, text] of Object.entries(files)) writeFileSync(join(dir, f), text);
    const c = spawnSync('python3', ['-m', 'py_compile', ...Object.keys(files)], { cwd: dir, encoding: 'utf8' });
    expect(c.status, c.stderr).toBe(0);
  });
});

/** sitecustomize.py, with stand-ins for TeamTR's packages: the swap happens on import, and only there. */
describe('the exported hook puts the protocol rollout in TeamTR\'s place', () => {
  it('importing verl.workers.rollout in a fresh python3 with the data folder on PYTHONPATH yields ProtocolHFRollout', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sat-hook-'));
    const stub = join(dir, 'stub');
    const data = join(dir, 'data');
    for (const d of [stub, `${stub}/verl`, `${stub}/verl/workers`, `${stub}/verl/workers/rollout`, data]) spawnSync('mkdir', ['-p', d]);
    writeFileSync(`${stub}/verl/__init__.py`, '');
    writeFileSync(`${stub}/verl/workers/__init__.py`, '');
    writeFileSync(`${stub}/verl/workers/rollout/multi_agent_hf_rollout.py`, 'class MultiAgentHFRollout:\n    def __init__(self, modules, config):\n        self.modules = modules\n        self.config = config\n');
    writeFileSync(`${stub}/verl/workers/rollout/__init__.py`, 'from .multi_agent_hf_rollout import MultiAgentHFRollout\n');
    writeFileSync(`${stub}/numpy.py`, '');
    for (const [f, text] of Object.entries({ 'teamplay.py': teamplayModule('chain', 3), 'teamtr_rollout.py': teamtrRolloutModule(), 'sitecustomize.py': siteCustomizeModule(), 'reward.py': rewardModule('arithmetic', 0) })) writeFileSync(join(data, f), text);
    const code = 'from verl.workers.rollout import MultiAgentHFRollout as R\nfrom verl.workers.rollout.multi_agent_hf_rollout import MultiAgentHFRollout as Base\nr = R(modules={}, config={})\nprint(R.__name__, R.__module__, issubclass(R, Base))';
    const run = (path: string) => spawnSync('python3', ['-c', code], { cwd: dir, encoding: 'utf8', env: { ...process.env, PYTHONPATH: path } });
    const hooked = run(`${data}:${stub}`);
    expect(hooked.status, hooked.stderr).toBe(0);
    expect(hooked.stdout.trim()).toBe('ProtocolHFRollout teamtr_rollout True');
    expect(hooked.stderr).toContain('[sat-playground] rollout.name=multi_agent_hf runs teamtr_rollout.ProtocolHFRollout');
    const plain = run(stub);
    expect(plain.stdout.trim()).toBe('MultiAgentHFRollout verl.workers.rollout.multi_agent_hf_rollout True');
  });
});

/**
 * ProtocolHFRollout.generate_sequences itself, with torch and stand-ins for what only TeamTR's
 * environment has (verl's DataProto, tensordict, a transformers tokenizer and model: a char-level
 * tokenizer with a chat template, a module whose generate picks a scripted reply by a hash of the
 * context it decodes). Needs a python3 with torch (Debian: apt-get install python3-torch, which
 * installs it for /usr/bin/python3); without one it is skipped and says so.
 */
const TORCH_PY = ['python3', '/usr/bin/python3'].find((py) => spawnSync(py, ['-c', 'import torch'], { encoding: 'utf8' }).status === 0);

const ROLLOUT_DRIVER = String.raw`
import json, sys, types
import torch
# torch's FSDP is not importable on every build (Debian's 1.13 under Python 3.11); the stand-in model is not FSDP.
sys.modules.setdefault("torch.distributed.fsdp", types.SimpleNamespace(FullyShardedDataParallel=type("FSDP", (), {})))
try:
    import torch.distributed.fsdp as _f
    _f.FullyShardedDataParallel
except Exception:
    sys.modules["torch.distributed.fsdp"] = types.SimpleNamespace(FullyShardedDataParallel=type("FSDP", (), {}))
import transformers
from verl import DataProto
import teamtr_rollout

job = json.load(sys.stdin)
tok = transformers.AutoTokenizer.from_pretrained("chat")

${FNV_PY}
class StandIn(torch.nn.Module):
    def __init__(self, agent):
        super().__init__()
        self.w = torch.nn.Parameter(torch.zeros(1))
        self.agent = agent
    def generate(self, input_ids, attention_mask, max_new_tokens, eos_token_id, pad_token_id, **kw):
        rows = []
        for i in range(input_ids.shape[0]):
            ctx = tok.decode(input_ids[i][attention_mask[i].bool()].tolist())
            assert ctx.startswith("<|user|>") and ctx.endswith("<|assistant|>"), ctx
            ctx = ctx[len("<|user|>"):-len("<|assistant|>")]
            c = job["cands"]
            reply = tok(c[fnv(ctx) % len(c)])["input_ids"] + [eos_token_id]
            rows.append(reply[:max_new_tokens])
        width = max(len(r) for r in rows) + 3
        out = torch.full((input_ids.shape[0], input_ids.shape[1] + width), pad_token_id, dtype=torch.long)
        out[:, : input_ids.shape[1]] = input_ids
        for i, r in enumerate(rows):
            out[i, input_ids.shape[1] : input_ids.shape[1] + len(r)] = torch.tensor(r)
        return out

class Config(dict):
    __getattr__ = dict.get

G, n = job["group"], job["n_agents"]
prompts, agents = [], []
for p in job["prompts"]:
    for a in range(n):
        for s in range(G):
            prompts.append(p); agents.append(a)
L = 64
ids = torch.zeros((len(prompts), L), dtype=torch.long)
mask = torch.zeros((len(prompts), L), dtype=torch.long)
for i, p in enumerate(prompts):
    e = tok(p)["input_ids"]
    ids[i, L - len(e):] = torch.tensor(e); mask[i, L - len(e):] = 1
batch = {"input_ids": ids, "attention_mask": mask, "position_ids": torch.clamp(mask.cumsum(1) - 1, min=0), "agent_id": torch.tensor(agents).unsqueeze(-1)}
config = Config(agent_model_paths=["chat"] * n, response_length=job["response_length"], do_sample=True, temperature=1.0, top_k=0, top_p=1.0, n=G)
rollout = teamtr_rollout.ProtocolHFRollout(modules={a: StandIn(a) for a in range(n)}, config=config)
out = rollout.generate_sequences(DataProto(batch=batch, meta_info={"eos_token_id": tok.eos_token_id, "pad_token_id": tok.pad_token_id, "do_sample": True}))
b = out.batch
N, W = b["prompts"].shape
R = b["responses"].shape[1]
assert b["input_ids"].shape == (N, W + R) and b["attention_mask"].shape == (N, W + R) and b["position_ids"].shape == (N, W + R)
assert torch.equal(b["input_ids"], torch.cat([b["prompts"], b["responses"]], dim=1))
rows = []
for i in range(N):
    am = b["attention_mask"][i]
    pos = b["position_ids"][i]
    assert int(pos[am.bool()][0]) == 0 and torch.equal(pos[am.bool()], torch.arange(int(am.sum())))
    prompt = tok.decode(b["prompts"][i][am[:W].bool()].tolist())
    reply_ids = b["responses"][i][am[W:].bool()].tolist()
    rows.append({"agent": agents[i], "prompt": prompt, "reply": tok.decode(reply_ids, skip_special_tokens=True), "ends_eos": reply_ids[-1] == tok.eos_token_id, "team": out.non_tensor_batch["reward_scores"][i]["team"]})
print(json.dumps({"rows": rows, "R": R}))
`;


describe('ProtocolHFRollout.generate_sequences with torch and stand-ins for TeamTR\'s packages', () => {
  it.skipIf(!TORCH_PY)('plays the chain across the agents\' modules: prompts, replies, tensors and reward_scores as protocols.ts has them', () => {
    const cfg = presetConfig('arith-team');
    const task = LLM_TASKS.arithmetic.make({ seed: cfg.taskSeed, level: cfg.level });
    const probs = Array.from({ length: 6 }, (_, i) => task.generate('train', i)).map((p) => ({ ...p, prompt: promptText('arithmetic', p, 'strict') }));
    const cands = ['7', ' 12 ', 'The answer is 9.', '3<sep>4', '<a2>5', '', '11'];
    const job = { group: 2, n_agents: cfg.agents, prompts: probs.map((p) => p.prompt), cands, response_length: 8 };
    const dir = mkdtempSync(join(tmpdir(), 'sat-rollout-'));
    for (const [f, text] of Object.entries({ ...STUBS, 'teamplay.py': teamplayModule('chain', cfg.agents), 'teamtr_rollout.py': teamtrRolloutModule(), 'reward.py': rewardModule('arithmetic', 0), 'driver.py': ROLLOUT_DRIVER })) {
      spawnSync('mkdir', ['-p', join(dir, f, '..')]);
      writeFileSync(join(dir, f), text);
    }
    const r = spawnSync(TORCH_PY!, ['driver.py'], { cwd: dir, input: JSON.stringify(job), encoding: 'utf8', env: { ...process.env, PYTHONPATH: dir } });
    expect(r.status, r.stderr).toBe(0);
    const { rows, R } = JSON.parse(r.stdout) as { rows: { agent: number; prompt: string; reply: string; ends_eos: boolean; team: { messages: string[] } }[]; R: number };
    expect(R).toBe(8);
    expect(rows).toHaveLength(6 * cfg.agents * 2);
    let saw = 0;
    probs.forEach((p, c) => {
      for (let s = 0; s < 2; s++) {
        const spec = { protocol: 'chain' as const, nAgents: cfg.agents };
        const messages: Message[] = [];
        for (let slots = nextTurn(spec, p, messages); slots.length > 0; slots = nextTurn(spec, p, messages)) {
          const slot = slots[0]!;
          const row = rows[(c * cfg.agents + slot.agent) * 2 + s]!;
          const text = cands[hashString(slot.context) % cands.length]!;
          expect(row.prompt, `problem ${c} sample ${s} agent ${slot.agent}`).toBe(`<|user|>${slot.context}<|assistant|>`);
          expect([row.agent, row.reply, row.ends_eos]).toEqual([slot.agent, text.slice(0, 8), text.length < 8]);
          messages.push({ turn: slot.turn, agent: slot.agent, text: row.reply });
          if (slot.agent > 0 && slot.context.includes('<sep>')) saw++;
        }
        for (let a = 0; a < cfg.agents; a++) expect(rows[(c * cfg.agents + a) * 2 + s]!.team.messages).toEqual(messages.map((m) => m.text));
      }
    });
    expect(saw).toBeGreaterThan(0);
  });
  if (!TORCH_PY) it('is skipped: no python3 with torch here (apt-get install python3-torch)', () => console.log('ProtocolHFRollout test skipped: no python3 with torch on this machine; apt-get install python3-torch runs it.'));
});
