/**
 * A smoke run of the exported team modules with a real model: tiny random-weight torch language
 * models (an embedding, a GRU and a linear head over a char-level vocabulary, one per agent),
 * sampling on CPU, play 2 episodes of each chain preset through TeamTR's rollout
 * (ProtocolHFRollout.generate_sequences) and through verl's agent loop (TeamAgentLoop.run, the
 * teammates behind a local chat server). Whatever the models write, every prompt must be the
 * context src/tasks/llm/protocols.ts builds from the earlier replies, every team reward
 * teamVerdict's; and one policy-gradient step on the rollout's tensors must give every agent's
 * model finite, non-zero gradients. Needs a python3 with torch (Debian: apt-get install
 * python3-torch); without one it is skipped and says so. What it cannot stand for (real
 * checkpoints, tokenizers, verl, TeamTR, vLLM): docs/real-run.md.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { presetConfig } from '../src/sat/presets';
import { CHAT_STANDIN_PY } from './helpers/chatStandin';
import { LLM_TASKS, nextTurn, teamVerdict, type LlmTaskName, type Message } from '../src/tasks/llm/index';
import { rewardModule } from '../src/bridge/rewardPy';
import { dataSource, groundTruth, promptText, responseTokens } from '../src/bridge/taskData';
import { withRewardMode } from '../src/bridge/answer';
import { teamplayModule, teamtrRolloutModule, verlTeamLoopModule } from '../src/bridge/teamPy';
import { TEAMTR_STUBS, VERL_STUBS } from './helpers/chainStandIn';

const TORCH_PY = ['python3', '/usr/bin/python3'].find((py) => spawnSync(py, ['-c', 'import torch'], { encoding: 'utf8' }).status === 0);

/** A tiny causal language model over ids 0..130 (pad, bos-free, eos = 2, ASCII + 3), sampling with its own seed. */
const TINY_PY = String.raw`import importlib
import sys

import torch

V = 131


class TinyLM(torch.nn.Module):
    def __init__(self, seed):
        super().__init__()
        torch.manual_seed(seed)
        self.emb = torch.nn.Embedding(V, 16)
        self.rnn = torch.nn.GRU(16, 32, batch_first=True)
        self.head = torch.nn.Linear(32, V)
        self.gen = torch.Generator().manual_seed(seed)

    def forward(self, ids):
        h, _ = self.rnn(self.emb(ids.clamp(max=V - 1)))
        return self.head(h)

    def sample(self, prompt, max_new_tokens, eos, temperature=1.0):
        """Token by token from the prompt's ids; stops after eos."""
        out = []
        with torch.no_grad():
            h, state = self.rnn(self.emb(torch.tensor([prompt]).clamp(max=V - 1)))
            logits = self.head(h[:, -1])
            for _ in range(max_new_tokens):
                p = torch.softmax(logits / max(temperature, 1e-6), dim=-1)
                t = int(torch.multinomial(p, 1, generator=self.gen))
                out.append(t)
                if t == eos:
                    break
                h, state = self.rnn(self.emb(torch.tensor([[t]])), state)
                logits = self.head(h[:, -1])
        return out

    def generate(self, input_ids, attention_mask, max_new_tokens, eos_token_id, pad_token_id, temperature=1.0, **kw):
        """transformers' generate as the rollout calls it: left-padded rows in, prompt + reply (padded) out."""
        rows = [self.sample(input_ids[i][attention_mask[i].bool()].tolist(), max_new_tokens, eos_token_id, temperature) for i in range(input_ids.shape[0])]
        out = torch.full((input_ids.shape[0], input_ids.shape[1] + max(len(r) for r in rows)), pad_token_id, dtype=torch.long)
        out[:, : input_ids.shape[1]] = input_ids
        for i, r in enumerate(rows):
            out[i, input_ids.shape[1]: input_ids.shape[1] + len(r)] = torch.tensor(r)
        return out


def preset_modules(folder, *names):
    """The exported modules of one preset, imported afresh from its own folder (each preset has its own reward.py and teamplay.py)."""
    for m in ("reward", "teamplay", "teamtr_rollout", "verl_team_loop"):
        sys.modules.pop(m, None)
    sys.path.insert(0, folder)
    try:
        return [importlib.import_module(n) for n in names]
    finally:
        sys.path.remove(folder)


def pg_step(model, input_ids, attention_mask, response_mask, advantages):
    """One REINFORCE step's gradients: -A * sum of the response tokens' log-probs, per row."""
    model.zero_grad()
    logp = torch.log_softmax(model(input_ids)[:, :-1], dim=-1).gather(-1, input_ids[:, 1:].unsqueeze(-1)).squeeze(-1)
    loss = -(advantages.unsqueeze(-1) * logp * response_mask[:, 1:]).sum() / max(1, len(advantages))
    loss.backward()
    g = torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None])
    return {"finite": bool(torch.isfinite(g).all()), "norm": float(g.norm())}
`;

/** TeamTR: the rollout with a TinyLM per agent, then the reward as TeamTR's reward manager asks it, then a gradient step per agent. */
const TEAMTR_DRIVER = String.raw`
import json, sys, types
import torch
sys.modules["torch.distributed.fsdp"] = types.SimpleNamespace(FullyShardedDataParallel=type("FSDP", (), {}))
import transformers
from verl import DataProto
from tiny import TinyLM, pg_step, preset_modules

tok = transformers.AutoTokenizer.from_pretrained("tiny")


class Config(dict):
    __getattr__ = dict.get


def play(job):
    reward, teamtr_rollout = preset_modules(job["dir"], "reward", "teamtr_rollout")
    n, G = job["n_agents"], job["group"]
    prompts, agents = [], []
    for a in range(n):
        for s in range(G):
            prompts.append(job["prompt"]); agents.append(a)
    L = max(len(tok(p)["input_ids"]) for p in prompts)
    ids = torch.zeros((len(prompts), L), dtype=torch.long)
    mask = torch.zeros((len(prompts), L), dtype=torch.long)
    for i, p in enumerate(prompts):
        e = tok(p)["input_ids"]
        ids[i, L - len(e):] = torch.tensor(e); mask[i, L - len(e):] = 1
    models = {a: TinyLM(100 + a) for a in range(n)}
    config = Config(agent_model_paths=["tiny"] * n, response_length=job["response_length"], do_sample=True, temperature=1.0, top_k=0, top_p=1.0, n=G)
    rollout = teamtr_rollout.ProtocolHFRollout(modules=models, config=config)
    out = rollout.generate_sequences(DataProto(batch={"input_ids": ids, "attention_mask": mask, "agent_id": torch.tensor(agents).unsqueeze(-1)}, meta_info={"eos_token_id": 2, "pad_token_id": 0, "do_sample": True}))
    b = out.batch
    W = b["prompts"].shape[1]
    rows, rewards = [], []
    for i in range(len(agents)):
        am = b["attention_mask"][i]
        rs = out.non_tensor_batch["reward_scores"][i]
        rewards.append(reward.compute_score(reward.DATA_SOURCE, "", job["ground_truth"], {"rollout_reward_scores": rs}))
        rows.append({"agent": agents[i], "prompt": tok.decode(b["prompts"][i][am[:W].bool()].tolist()), "reply": tok.decode(b["responses"][i][am[W:].bool()].tolist(), skip_special_tokens=True), "messages": rs["team"]["messages"], "reward": rewards[-1]})
    grads = []
    r = torch.tensor(rewards)
    for a in range(n):
        sel = torch.tensor([i for i in range(len(agents)) if agents[i] == a])
        adv = r[sel] - r[sel].mean() + 1.0  # a non-zero weight even when every reward of the group is equal
        resp_mask = torch.cat([torch.zeros_like(b["prompts"][sel]), b["attention_mask"][sel][:, W:]], dim=1)
        grads.append(pg_step(models[a], b["input_ids"][sel], b["attention_mask"][sel], resp_mask.float(), adv))
    return {"rows": rows, "grads": grads}


print(json.dumps([play(job) for job in json.load(sys.stdin)]))
`;

/** verl: TeamAgentLoop with the trained agent's TinyLM behind verl's server and the teammates' behind a chat server. */
const VERL_DRIVER = String.raw`
import asyncio, json, sys
from types import SimpleNamespace
import torch
${CHAT_STANDIN_PY}
from tiny import TinyLM, pg_step, preset_modules

asked = []
models = {}


def answer(body):
    agent = int(body["model"][len("agent"):])
    ctx = body["messages"][0]["content"]
    text = tok.decode(models[agent].sample(tok.apply_chat_template(body["messages"]), body["max_tokens"], 2, body["temperature"]))
    asked.append({"agent": agent, "context": ctx, "text": text})
    return text


class Server:
    def __init__(self, agent, R):
        self.agent, self.R = agent, R
    async def generate(self, request_id, prompt_ids, sampling_params, **kw):
        ids = models[self.agent].sample(prompt_ids, self.R, 2, sampling_params["temperature"])
        text = tok.decode(prompt_ids)
        asked.append({"agent": self.agent, "context": text[len("<|user|>"):-len("<|assistant|>")], "text": tok.decode(ids[: self.R])})
        return SimpleNamespace(token_ids=ids, log_probs=None, num_preempted=None)


url, http = serve_teammates(answer)


async def play(job):
    teamplay, verl_team_loop = preset_modules(job["dir"], "teamplay", "verl_team_loop")
    R, N = job["response_length"], teamplay.N_AGENTS
    models.clear()
    models.update({a: TinyLM(200 + a) for a in range(N)})
    config = SimpleNamespace(config=SimpleNamespace(actor_rollout_ref=SimpleNamespace(rollout=SimpleNamespace(response_length=R))))
    out = []
    for e in range(2):
        agent = e % N
        loop = verl_team_loop.TeamAgentLoop(trainer_config=config, server_manager=Server(agent, R), tokenizer=tok, processor=None, dataset_cls=None, data_config=SimpleNamespace(config={}), agent=agent, teammates={str(i): url for i in range(N) if i != agent})
        start = len(asked)
        o = await loop.run({"temperature": 1.0, "top_p": 1.0, "top_k": -1}, raw_prompt=[{"role": "user", "content": job["prompt"]}], data_source=job["data_source"], reward_model={"ground_truth": job["ground_truth"]})
        ids = torch.tensor([o.prompt_ids + o.response_ids])
        g = pg_step(models[agent], ids, torch.ones_like(ids), torch.tensor([[0.0] * len(o.prompt_ids) + [float(m) for m in o.response_mask]]), torch.tensor([o.reward_score + 1.0]))
        out.append({"agent": agent, "turns": asked[start:], "prompt": tok.decode(o.prompt_ids), "response": tok.decode(o.response_ids), "reward": o.reward_score, "grad": g})
    return out


async def main():
    return [await play(job) for job in json.load(sys.stdin)]

print(json.dumps(asyncio.run(main())))
http.shutdown()
`;

const PRESETS = ['arith-team', 'plan-team', 'plan-team-2'];

/** The preset's first training problem, as the export writes it, and its task in the export's reward mode. */
function setup(preset: string) {
  const cfg = presetConfig(preset);
  const name = cfg.task as LlmTaskName;
  const task = withRewardMode(LLM_TASKS[name].make({ seed: cfg.taskSeed, level: cfg.level, formatReward: cfg.formatReward }), cfg.rewardMode);
  const raw = task.generate('train', 0);
  const p = { ...raw, prompt: promptText(name, raw, cfg.rewardMode) };
  const files = { 'reward.py': rewardModule(name, cfg.formatReward, cfg.rewardMode), 'teamplay.py': teamplayModule('chain', cfg.agents), 'teamtr_rollout.py': teamtrRolloutModule(), 'verl_team_loop.py': verlTeamLoopModule() };
  return { cfg, task, p, spec: { protocol: 'chain' as const, nAgents: cfg.agents }, files, job: { n_agents: cfg.agents, group: 2, prompt: p.prompt, ground_truth: groundTruth(name, raw), data_source: dataSource(name), response_length: responseTokens(cfg) } };
}

/** Every preset's episodes through one engine's driver, in one python3 (torch loads once): each preset's modules in a folder of its own. */
function runAll(stubs: Record<string, string>, driver: string): unknown[] {
  const dir = mkdtempSync(join(tmpdir(), 'sat-smoke-'));
  const write = (f: string, text: string) => {
    mkdirSync(join(dir, f, '..'), { recursive: true });
    writeFileSync(join(dir, f), text);
  };
  for (const [f, text] of Object.entries({ ...stubs, 'tiny.py': TINY_PY, 'driver.py': driver })) write(f, text);
  const jobs = PRESETS.map((preset) => {
    const { files, job } = setup(preset);
    for (const [f, text] of Object.entries(files)) write(`${preset}/${f}`, text);
    return { ...job, dir: join(dir, preset) };
  });
  const r = spawnSync(TORCH_PY!, ['driver.py'], { cwd: dir, input: JSON.stringify(jobs), encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, env: { ...process.env, PYTHONPATH: dir } });
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as unknown[];
}

/** Runs once, on first use. */
function once<T>(f: () => T): () => T {
  let v: { value: T } | undefined;
  return () => (v ??= { value: f() }).value;
}

interface TeamtrPlayed {
  rows: { agent: number; prompt: string; reply: string; messages: string[]; reward: number }[];
  grads: { finite: boolean; norm: number }[];
}
interface VerlPlayed {
  agent: number;
  turns: { agent: number; context: string; text: string }[];
  prompt: string;
  response: string;
  reward: number;
  grad: { finite: boolean; norm: number };
}

const teamtr = once(() => runAll(TEAMTR_STUBS, TEAMTR_DRIVER) as TeamtrPlayed[]);
const verl = once(() => runAll(VERL_STUBS, VERL_DRIVER) as VerlPlayed[][]);

describe.skipIf(!TORCH_PY)('the team modules with tiny real torch models on CPU: 2 episodes of each chain preset', () => {
  it.each(PRESETS)('%s through TeamTR\'s rollout: the prompts follow what the models wrote; every agent\'s model gets gradients', (preset) => {
    const { cfg, task, p, spec } = setup(preset);
    const got = teamtr()[PRESETS.indexOf(preset)]!;
    expect(got.rows).toHaveLength(cfg.agents * 2);
    for (let s = 0; s < 2; s++) {
      const messages: Message[] = [];
      for (let slots = nextTurn(spec, p, messages); slots.length > 0; slots = nextTurn(spec, p, messages)) {
        const row = got.rows[slots[0]!.agent * 2 + s]!;
        expect(row.prompt, `episode ${s} agent ${row.agent}`).toBe(`<|user|>${slots[0]!.context}<|assistant|>`);
        messages.push({ turn: slots[0]!.turn, agent: slots[0]!.agent, text: row.reply });
      }
      const want = teamVerdict(spec, task, p, messages).reward;
      for (let a = 0; a < cfg.agents; a++) expect([got.rows[a * 2 + s]!.messages, got.rows[a * 2 + s]!.reward]).toEqual([messages.map((m) => m.text), want]);
      // The models wrote something, which the later agents' prompts hold.
      expect(messages.some((m) => m.text.length > 0)).toBe(true);
    }
    for (const g of got.grads) expect(g.finite && g.norm > 0).toBe(true);
  });

  it.each(PRESETS)('%s through verl\'s agent loop: the same, the teammates behind a chat server', (preset) => {
    const { cfg, task, p, spec } = setup(preset);
    const got = verl()[PRESETS.indexOf(preset)]!;
    expect(got).toHaveLength(2);
    got.forEach((e, k) => {
      expect(e.agent).toBe(k % cfg.agents);
      const messages: Message[] = [];
      const contexts: string[] = [];
      for (let slots = nextTurn(spec, p, messages); slots.length > 0; slots = nextTurn(spec, p, messages)) {
        const turn = e.turns[slots[0]!.turn]!;
        expect([turn.agent, turn.context], `episode ${k} turn ${slots[0]!.turn}`).toEqual([slots[0]!.agent, slots[0]!.context]);
        contexts.push(slots[0]!.context);
        messages.push({ turn: slots[0]!.turn, agent: slots[0]!.agent, text: turn.text });
      }
      // The trajectory verl trains on: the trained agent's rendered context and reply.
      expect([e.prompt, e.response]).toEqual([`<|user|>${contexts[e.agent]}<|assistant|>`, messages[e.agent]!.text]);
      expect(e.reward).toBe(teamVerdict(spec, task, p, messages).reward);
      expect(e.grad.finite && e.grad.norm > 0).toBe(true);
    });
  });
});
if (!TORCH_PY) describe('the team modules with tiny real torch models', () => it('is skipped: no python3 with torch here (apt-get install python3-torch)', () => console.log('bridge-smoke skipped: no python3 with torch on this machine; apt-get install python3-torch runs it.')));
