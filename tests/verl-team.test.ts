/**
 * The chain protocol on verl (src/bridge/teamPy.ts verl_team_loop.py, verl_team.py): python3 drives
 * the exported agent loop the way verl's AgentLoopWorker does (one instance per episode, `run` with
 * the dataset row's fields: verl/experimental/agent_loop/agent_loop.py:631–665 at the pinned
 * commit), on stand-ins for verl's AgentLoopBase (its tokenisation calls as single_turn_agent_loop.py
 * makes them), a scripted stand-in for verl's rollout server (the trained agent) and a real local
 * HTTP server answering OpenAI chat requests (the teammates). Every context each agent sees, every
 * message, the trained agent's prompt and response tokens and the team reward must equal what
 * src/tasks/llm/protocols.ts `nextTurn` / `teamVerdict` give, on ≥ 1,000 episodes of each chain
 * preset in both reward modes, with every agent of the chain trained in turn. The stage driver's
 * plan is held against verl's key lists and the update order, and its runs are carried out with
 * stand-ins for the commands it starts.
 * What this cannot check (verl, vLLM, the models): docs/real-run.md.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Rng } from '../src/core/rng';
import { presetConfig } from '../src/sat/presets';
import { CHAT_STANDIN_PY } from './helpers/chatStandin';
import { LLM_TASKS, nextTurn, teamVerdict, type LlmTaskName, type Message, type Problem } from '../src/tasks/llm/index';
import { hashString } from '../src/tasks/llm/types';
import { rewardModule } from '../src/bridge/rewardPy';
import { dataSource, groundTruth, promptText } from '../src/bridge/taskData';
import { withRewardMode, type RewardMode } from '../src/bridge/answer';
import { teamplayModule, verlTeamLoopModule } from '../src/bridge/teamPy';
import { recipe, DEFAULT_MODELS } from '../src/bridge/recipe';
import { checkVerl } from './helpers/engineSchemas';
import { freePorts } from './helpers/freePorts';
import { readRunLog } from '../src/bridge/runLog';
import { runTimeline } from '../src/bridge/runLogSeries';
import { candidates as baseCandidates, FNV_PY, VERL_STUBS as STUBS } from './helpers/chainStandIn';

/** The Python side: teammates on a local HTTP server, the trained agent on a stand-in server, one loop per episode. */
const DRIVER = String.raw`
import asyncio, json, sys
from types import SimpleNamespace
import teamplay, verl_team_loop
${CHAT_STANDIN_PY}
${FNV_PY}
job = json.load(sys.stdin)
R = job["response_length"]
EOS = 2
counts = {}
cands = {"now": None}
asked = []


def choose(ctx):
    k = counts.get(ctx, 0)
    counts[ctx] = k + 1
    c = cands["now"]
    return c[fnv("%d|%s" % (k, ctx)) % len(c)]


def answer(body):
    ctx = body["messages"][0]["content"]
    text = "".join(list(choose(ctx))[: body["max_tokens"]])
    asked.append({"agent": int(body["model"][len("agent"):]), "context": ctx, "text": text, "temperature": body.get("temperature")})
    return text


class Server:
    async def generate(self, request_id, prompt_ids, sampling_params, **kw):
        text = tok.decode(prompt_ids)
        assert text.startswith("<|user|>") and text.endswith("<|assistant|>"), text
        ctx = text[len("<|user|>"):-len("<|assistant|>")]
        reply = choose(ctx)
        asked.append({"agent": None, "context": ctx, "text": "".join(list(reply)[:R]), "temperature": sampling_params.get("temperature")})
        return SimpleNamespace(token_ids=tok.encode(reply) + [EOS], log_probs=None, num_preempted=None)


url, http = serve_teammates(answer)
N = teamplay.N_AGENTS
config = SimpleNamespace(config=SimpleNamespace(actor_rollout_ref=SimpleNamespace(rollout=SimpleNamespace(response_length=R))))


async def main():
    out = []
    for c, p in enumerate(job["problems"]):
        cands["now"] = p["candidates"]
        for s in range(job["group"]):
            agent = (c * job["group"] + s) % N
            loop = verl_team_loop.TeamAgentLoop(trainer_config=config, server_manager=Server(), tokenizer=tok, processor=None, dataset_cls=None, data_config=SimpleNamespace(config={}), agent=agent, teammates={str(i): url for i in range(N) if i != agent})
            start = len(asked)
            row = {"raw_prompt": [{"role": "user", "content": p["prompt"]}], "data_source": job["data_source"], "reward_model": {"style": "rule", "ground_truth": p["ground_truth"]}, "extra_info": {}, "index": c}
            o = await loop.run({"temperature": 1.0, "top_p": 1.0, "top_k": -1, "repetition_penalty": 1.0, "logprobs": False}, **row)
            turns = asked[start:]
            out.append({"c": c, "s": s, "agent": agent, "asked": [t["agent"] for t in turns], "contexts": [t["context"] for t in turns], "texts": [t["text"] for t in turns],
                        "prompt": tok.decode(o.prompt_ids), "response": tok.decode(o.response_ids), "response_len": len(o.response_ids), "mask": o.response_mask, "reward": o.reward_score, "temps": [t["temperature"] for t in turns]})
    return out

print(json.dumps({"episodes": asyncio.run(main())}))
http.shutdown()
`;

interface Played {
  c: number;
  s: number;
  agent: number;
  asked: (number | null)[];
  contexts: string[];
  texts: string[];
  prompt: string;
  response: string;
  response_len: number;
  mask: number[];
  reward: number;
  temps: number[];
}

function writeFiles(dir: string, files: Record<string, string>): void {
  for (const [f, text] of Object.entries(files)) {
    mkdirSync(join(dir, f, '..'), { recursive: true });
    writeFileSync(join(dir, f), text);
  }
}

function python(dir: string, args: string[], input = ''): string {
  const r = spawnSync('python3', args, { cwd: dir, input, encoding: 'utf8', maxBuffer: 256 * 1024 * 1024, env: { ...process.env, PYTHONPATH: dir } });
  if (r.error) throw new Error(`python3 could not be run (${r.error.message}); the verl team tests need python3 on the PATH.`);
  expect(r.status, r.stderr).toBe(0);
  return r.stdout;
}

const R = 16;
const codepoints = (s: string, n: number) => [...s].slice(0, n).join('');
/** The chain tests' replies and one longer than the response length, so that cut replies occur. */
const candidates = (p: Problem, rng: Rng) => [...baseCandidates(p, rng), `so the final answer, after all, is ${p.answer}`];

describe('verl_team_loop.py plays the chain in verl\'s agent loop exactly as protocols.ts does', () => {
  it.each([
    { preset: 'arith-team', mode: 'strict' as RewardMode },
    { preset: 'arith-team', mode: 'extract' as RewardMode },
    { preset: 'plan-team', mode: 'strict' as RewardMode },
    { preset: 'plan-team', mode: 'extract' as RewardMode },
    { preset: 'plan-team-2', mode: 'strict' as RewardMode },
    { preset: 'plan-team-2', mode: 'extract' as RewardMode },
  ])('$preset, rewardMode $mode: every context, message, trained turn and team reward of ≥ 1,000 episodes', ({ preset, mode }) => {
    const cfg = presetConfig(preset, { rewardMode: mode });
    expect(cfg.protocol).toBe('chain');
    const name = cfg.task as LlmTaskName;
    const task = withRewardMode(LLM_TASKS[name].make({ seed: cfg.taskSeed, level: cfg.level, formatReward: cfg.formatReward }), mode);
    const problems = Math.ceil(1040 / cfg.group);
    const rng = new Rng(cfg.agents * 17 + problems, [mode.length]);
    const probs = Array.from({ length: problems }, (_, i) => {
      const p = task.generate('train', i);
      return { p: { ...p, prompt: promptText(name, p, mode) }, candidates: candidates(p, rng) };
    });
    const job = { group: cfg.group, response_length: R, data_source: dataSource(name), problems: probs.map(({ p, candidates: c }) => ({ prompt: p.prompt, ground_truth: groundTruth(name, p), candidates: c })) };
    const dir = mkdtempSync(join(tmpdir(), 'sat-verl-team-'));
    writeFiles(dir, { ...STUBS, 'reward.py': rewardModule(name, cfg.formatReward, mode), 'teamplay.py': teamplayModule('chain', cfg.agents), 'verl_team_loop.py': verlTeamLoopModule(), 'driver.py': DRIVER });
    const got = (JSON.parse(python(dir, ['driver.py'], JSON.stringify(job))) as { episodes: Played[] }).episodes;
    expect(got.length).toBe(problems * cfg.group);
    expect(got.length).toBeGreaterThanOrEqual(1000);

    // The same episodes in TypeScript, in the same order, with the stand-ins' choice rule.
    const counts = new Map<string, number>();
    const spec = { protocol: 'chain' as const, nAgents: cfg.agents };
    const rewards = new Set<number>();
    const trained = new Set<number>();
    for (const e of got) {
      const { p, candidates: cands } = probs[e.c]!;
      const messages: Message[] = [];
      const contexts: string[] = [];
      for (let slots = nextTurn(spec, p, messages); slots.length > 0; slots = nextTurn(spec, p, messages)) {
        for (const slot of slots) {
          const k = counts.get(slot.context) ?? 0;
          counts.set(slot.context, k + 1);
          contexts.push(slot.context);
          messages.push({ turn: slot.turn, agent: slot.agent, text: codepoints(cands[hashString(`${k}|${slot.context}`) % cands.length]!, R) });
        }
      }
      const want = teamVerdict(spec, task, p, messages).reward;
      const j = (e.c * cfg.group + e.s) % cfg.agents;
      const where = `problem ${e.c} sample ${e.s}, agent ${j} trained`;
      expect(e.agent, where).toBe(j);
      expect({ asked: e.asked, contexts: e.contexts, texts: e.texts }, where).toEqual({ asked: messages.map((m) => (m.agent === j ? null : m.agent)), contexts, texts: messages.map((m) => m.text) });
      // The trajectory verl trains on: agent j's rendered context, its reply (cut at response_length), all of it generated.
      expect(e.prompt, where).toBe(`<|user|>${contexts[j]}<|assistant|>`);
      expect(e.response, where).toBe(messages[j]!.text);
      expect(e.mask, where).toEqual(Array(e.response_len).fill(1));
      expect(e.reward, where).toBe(want);
      expect(e.temps, where).toEqual(Array(cfg.agents).fill(1));
      rewards.add(want);
      trained.add(j);
    }
    // Not trivial: later agents saw earlier messages, cut replies occurred, the team both earned and missed reward, every agent was trained.
    expect(got.some((e) => e.contexts[2]!.includes('<a1>') && e.contexts[2]!.includes('<sep>'))).toBe(true);
    expect(got.some((e) => e.response_len === R)).toBe(true);
    expect(rewards.has(1) && rewards.has(0)).toBe(true);
    expect([...trained].sort()).toEqual(Array.from({ length: cfg.agents }, (_, i) => i));
  });

  it('refuses a trained agent outside the team and a missing teammate server, by name', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sat-verl-team-'));
    writeFiles(dir, { ...STUBS, 'reward.py': rewardModule('arithmetic', 0), 'teamplay.py': teamplayModule('chain', 3), 'verl_team_loop.py': verlTeamLoopModule() });
    const code = [
      'import asyncio, verl_team_loop',
      'from types import SimpleNamespace as N',
      'cfg = N(config=N(actor_rollout_ref=N(rollout=N(response_length=8))))',
      'async def make(**kw):',
      '    try:',
      '        verl_team_loop.TeamAgentLoop(trainer_config=cfg, server_manager=None, tokenizer=None, processor=None, dataset_cls=None, data_config=N(config={}), **kw)',
      '    except ValueError as e:',
      '        print(e)',
      'asyncio.run(make(agent=3, teammates={}))',
      'asyncio.run(make(agent=1, teammates={"0": "http://x"}))',
    ].join('\n');
    expect(python(dir, ['-c', code]).trim().split('\n')).toEqual(["trained agent 3 is not one of the team's 3 agents", "no teammate server for agents [2] (the agent-loop config's teammates)"]);
  });
});

interface Run {
  stage: number;
  agent: number;
  model: string;
  train_file: string;
  teammates: Record<string, { model: string; port: number; url: string }>;
  overrides: string[];
  loop_config: { name: string; _target_: string; agent: number; teammates: Record<string, string> }[];
  checkpoint: string;
  merged: string;
}

describe('the chain presets export to verl as a stage driver, one run per stage and agent', () => {
  it.each(['arith-team', 'plan-team', 'plan-team-2'])('%s: the files, and the driver\'s runs in update order with each agent\'s current checkpoint', (preset) => {
    const cfg = presetConfig(preset);
    const r = recipe(cfg, DEFAULT_MODELS, 1, `${preset}.sat.yaml`);
    expect(r.engines.verl.ok, preset).toBe(true);
    const files = Object.fromEntries(r.files.map((f) => [f.path, f.text]));
    expect(Object.keys(files), preset).toContain(`${preset}.verl-team.py`);
    for (const f of ['verl_team_loop.py', 'teamplay.py', 'reward.py', 'train.verl.jsonl', 'val.verl.jsonl']) expect(Object.keys(files), preset).toContain(`${preset}.data/${f}`);
    expect(files[`${preset}.verl.sh`]).toContain(`exec python3 "$(dirname "$0")/${preset}.verl-team.py" "$@"`);
    expect(checkVerl(r.engines.verl.ok ? r.engines.verl.overrides : ['?'])).toEqual([]);

    const dir = mkdtempSync(join(tmpdir(), 'sat-verl-driver-'));
    writeFiles(dir, Object.fromEntries(Object.entries(files).filter(([f]) => f.startsWith(`${preset}.data/`) || f === `${preset}.verl-team.py`)));
    const work = join(dir, 'work');
    const lines = python(dir, [`${preset}.verl-team.py`, '--dry-run', '--work', work]).trim().split('\n');
    const runs = lines.map((l) => JSON.parse(l) as Run);
    expect(runs.length).toBe(cfg.stages * cfg.agents);
    const current = Array.from({ length: cfg.agents }, () => DEFAULT_MODELS[cfg.model]);
    runs.forEach((run, k) => {
      const where = `run ${k}`;
      expect([run.stage, run.agent], where).toEqual([Math.floor(k / cfg.agents) + 1, k % cfg.agents]);
      expect(run.model, where).toBe(current[run.agent]);
      expect(Object.fromEntries(Object.entries(run.teammates).map(([i, t]) => [i, t.model])), where).toEqual(Object.fromEntries(current.map((m, i) => [String(i), m]).filter(([i]) => Number(i) !== run.agent)));
      expect(run.loop_config, where).toEqual([{ name: 'sat_team_agent', _target_: 'verl_team_loop.TeamAgentLoop', agent: run.agent, teammates: Object.fromEntries(Object.entries(run.teammates).map(([i, t]) => [i, t.url])) }]);
      const keys = run.overrides.map((o) => o.split('=')[0]);
      expect(new Set(keys).size, where).toBe(keys.length);
      const get = (key: string) => run.overrides.find((o) => o.startsWith(`${key}=`))?.slice(key.length + 1);
      expect([get('actor_rollout_ref.model.path'), get('data.train_files'), get('trainer.total_training_steps'), get('trainer.val_before_train'), get('actor_rollout_ref.rollout.agent.default_agent_loop')], where).toEqual([run.model, run.train_file, '1', k === 0 ? 'true' : 'false', 'sat_team_agent']);
      expect(get('data.val_files'), where).toBe(join(dir, `${preset}.data`, 'val.verl.jsonl'));
      expect(run.checkpoint, where).toBe(join(get('trainer.default_local_dir')!, 'global_step_1', 'actor'));
      // A merged checkpoint is its agent's starting model fine-tuned: the same architecture (head count) for verl's checks.
      const start = runs.some((x) => x.merged === run.model) ? DEFAULT_MODELS[cfg.model] : run.model;
      expect(checkVerl(run.overrides.map((o) => (o.startsWith('actor_rollout_ref.model.path=') ? `actor_rollout_ref.model.path=${start}` : o))), where).toEqual([]);
      current[run.agent] = run.merged;
    });

    // Each run's problems are its stage's rows of the exported training file.
    const train = files[`${preset}.data/train.verl.jsonl`]!.split(/(?<=\n)/);
    const code = `import sys, json, importlib.util\nspec = importlib.util.spec_from_file_location('driver', sys.argv[2])\nverl_team = importlib.util.module_from_spec(spec)\nspec.loader.exec_module(verl_team)\nlines = open(sys.argv[1]).readlines()\nprint(json.dumps([verl_team.stage_rows(lines, s) for s in (1, ${cfg.stages})]))\ntry:\n    verl_team.stage_rows(lines, ${cfg.stages + 1})\nexcept ValueError as e:\n    print(e)`;
    const out = spawnSync('python3', ['-c', code, join(dir, `${preset}.data/train.verl.jsonl`), join(dir, `${preset}.verl-team.py`)], { cwd: dir, encoding: 'utf8' });
    expect(out.status, out.stderr).toBe(0);
    const [rows, err] = out.stdout.trim().split('\n');
    expect(JSON.parse(rows!)).toEqual([train.slice(0, cfg.batch), train.slice((cfg.stages - 1) * cfg.batch, cfg.stages * cfg.batch)]);
    expect(err).toBe(`the training file has ${cfg.stages * cfg.batch} rows; stage ${cfg.stages + 1} needs rows ${cfg.stages * cfg.batch}..${(cfg.stages + 1) * cfg.batch - 1}`);
  });

  it('an order not known in advance and LoRA are refused for a chain; another estimator or scheme is said; an independent team stays agent 0\'s baseline run', () => {
    const rnd = recipe(presetConfig('arith-team', { order: 'random', lora: 8 }));
    expect(rnd.engines.verl.ok ? [] : rnd.engines.verl.refused.map((x) => x.setting)).toEqual(['lora', 'order']);
    expect(recipe(presetConfig('arith-team', { protocol: 'independent', lora: 8 })).engines.verl.ok).toBe(true);
    const rev = recipe(presetConfig('arith-team', { order: 'reverse' }), DEFAULT_MODELS, 1, 'x.sat.yaml');
    const driver = rev.files.find((f) => f.path === 'x.verl-team.py')!.text;
    expect(driver).toContain(String.raw`\"order\":[2,1,0]`);
    const settings = (c: Parameters<typeof recipe>[0]) => { const e = recipe(c).engines.verl; return e.ok ? e.differs.map((d) => d.setting) : []; };
    expect(settings(presetConfig('arith-team'))).not.toContain('estimator');
    expect(settings(presetConfig('arith-team', { estimator: 'truncated-is', scheme: 'simultaneous' }))).toEqual(expect.arrayContaining(['estimator', 'scheme']));
    const ind = recipe(presetConfig('arith-team', { protocol: 'independent' }), DEFAULT_MODELS, 1, 'x.sat.yaml');
    expect(ind.files.map((f) => f.path).filter((p) => /verl.team|teamplay/.test(p))).toEqual(['x.data/teamplay.py']);
    expect(ind.files.find((f) => f.path === 'x.verl.sh')!.text).toContain('python3 -m verl.trainer.main_ppo');
  });
});

/**
 * The driver's own work, with stand-ins for the commands it runs: `vllm serve` is a small HTTP
 * server that names the model it serves, `python3 -m verl.trainer.main_ppo` a module that asks each
 * teammate's server which model it serves, imports the exported modules as Ray's workers would
 * (PYTHONPATH) and writes the checkpoint folder, `python3 -m verl.model_merger` one that writes the
 * merged folder. A second start skips every run already merged. The team's log the driver writes
 * from the runs' file logs is read back as the page's Import reads it.
 */
describe('verl-team.py runs the stages with its servers, verl and the merger', () => {
  const FAKE_VLLM = String.raw`import json, sys
from http.server import BaseHTTPRequestHandler, HTTPServer
args = sys.argv[1:]
assert args[0] == "serve", args
model, port, name = args[1], int(args[args.index("--port") + 1]), args[args.index("--served-model-name") + 1]
class H(BaseHTTPRequestHandler):
    def do_GET(self):
        out = json.dumps({"data": [{"id": name, "root": model}]}).encode()
        self.send_response(200); self.send_header("Content-Length", str(len(out))); self.end_headers(); self.wfile.write(out)
    def log_message(self, *a):
        pass
HTTPServer(("127.0.0.1", port), H).serve_forever()
`;
  const MAIN_PPO = String.raw`import json, os, sys, urllib.request
import teamplay, verl_team_loop
o = dict(a.split("=", 1) for a in sys.argv[1:])
loop = json.load(open(o["actor_rollout_ref.rollout.agent.agent_loop_config_path"]))[0]
served = {}
for i, url in loop["teammates"].items():
    with urllib.request.urlopen(url + "/models") as r:
        served[i] = json.loads(r.read())["data"][0]["root"]
with open(os.environ["SAT_RECORD"], "a") as f:
    f.write(json.dumps({"model": o["actor_rollout_ref.model.path"], "agent": loop["agent"], "served": served, "rows": len(open(o["data.train_files"]).readlines()), "log": os.environ["VERL_FILE_LOGGER_PATH"]}) + "\n")
os.makedirs(os.path.join(o["trainer.default_local_dir"], "global_step_1", "actor"))
# verl's file logger: the held-out score before training (first run only), then the step's metrics.
stage = int(o["trainer.experiment_name"].split("stage")[1].split("-")[0])
with open(os.environ["VERL_FILE_LOGGER_PATH"], "a") as f:
    if o["trainer.val_before_train"] == "true":
        f.write(json.dumps({"step": 0, "data": {"val-core/arithmetic/acc/mean@1": 0.1}}) + "\n")
    f.write(json.dumps({"step": 1, "data": {"actor/ppo_kl": stage + loop["agent"] / 10, "critic/score/mean": 0.5, "val-core/arithmetic/acc/mean@1": stage / 10 + loop["agent"] / 100}}) + "\n")
`;
  const MERGER = String.raw`import json, os, sys
a = sys.argv[1:]
assert a[:3] == ["merge", "--backend", "fsdp"], a
src, dst = a[a.index("--local_dir") + 1], a[a.index("--target_dir") + 1]
assert os.path.isdir(src), src
os.makedirs(dst)
json.dump({"from": src}, open(os.path.join(dst, "config.json"), "w"))
`;

  it('arith-team with 2 stages: 6 runs in order, each agent\'s teammates served from their current checkpoints, the team\'s log, then resumable', async () => {
    const cfg = presetConfig('arith-team', { stages: 2 });
    const r = recipe(cfg, DEFAULT_MODELS, 1, 'team.sat.yaml');
    const dir = mkdtempSync(join(tmpdir(), 'sat-verl-run-'));
    const stubs = join(dir, 'stubs');
    writeFiles(dir, Object.fromEntries(r.files.map((f) => [f.path, f.text])));
    writeFiles(stubs, { 'fake_vllm.py': FAKE_VLLM, 'verl/__init__.py': '', 'verl/trainer/__init__.py': '', 'verl/trainer/main_ppo.py': MAIN_PPO, 'verl/model_merger/__init__.py': '', 'verl/model_merger/__main__.py': MERGER, ...Object.fromEntries(Object.entries(STUBS).filter(([f]) => f.includes('agent_loop'))) });
    const record = join(dir, 'record.jsonl');
    const port = await freePorts(cfg.agents);
    const start = () => spawnSync('python3', ['team.verl-team.py', '--work', dir, '--vllm', `python3 ${join(stubs, 'fake_vllm.py')}`, '--base-port', String(port), '--server-timeout', '60'], { cwd: dir, encoding: 'utf8', env: { ...process.env, PYTHONPATH: stubs, SAT_RECORD: record } });
    const first = start();
    expect(first.status, first.stderr).toBe(0);
    const calls = readFileSync(record, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { model: string; agent: number; served: Record<string, string>; rows: number; log: string });
    const current = Array.from({ length: cfg.agents }, () => DEFAULT_MODELS[cfg.model]);
    expect(calls.map((c) => c.agent)).toEqual([0, 1, 2, 0, 1, 2]);
    calls.forEach((c, k) => {
      const stage = Math.floor(k / cfg.agents) + 1;
      const root = join(dir, 'team.verl-team', `stage${stage}-agent${c.agent}`);
      expect([c.model, c.rows, c.log], `run ${k}`).toEqual([current[c.agent], cfg.batch, join(root, 'verl-log.jsonl')]);
      expect(c.served, `run ${k}`).toEqual(Object.fromEntries(current.map((m, i) => [String(i), m]).filter(([i]) => Number(i) !== c.agent)));
      expect(JSON.parse(readFileSync(join(root, 'hf', 'config.json'), 'utf8'))).toEqual({ from: join(root, 'checkpoints', 'global_step_1', 'actor') });
      current[c.agent] = join(root, 'hf');
    });
    // The servers were stopped: nothing answers on their ports any more.
    const probe = spawnSync('python3', ['-c', `import socket\nfor p in (${port}, ${port + 1}, ${port + 2}):\n    s = socket.socket()\n    print(s.connect_ex(("127.0.0.1", p)) != 0)`], { encoding: 'utf8' });
    expect(probe.stdout.trim().split('\n')).toEqual(['True', 'True', 'True']);
    // The team's log, in TeamTR's shape: per stage each agent's metrics, the held-out score after the stage's last run.
    const log = readRunLog(readFileSync(join(dir, 'team.verl-team-log.jsonl'), 'utf8'), 'team.verl-team-log.jsonl');
    expect([log.format, log.engine, log.agents, Array.from(log.steps)]).toEqual(['verl-jsonl', 'verlTeam', 3, [0, 1, 2]]);
    // the timeline reads the driver's order from each stage's keys
    const tl = runTimeline(log);
    expect('rows' in tl && tl.rows.map((r) => r.updates.map((u) => u.agent))).toEqual([[0, 1, 2], [0, 1, 2]]);
    // A step's metrics from the columns (NaN where the step logged nothing).
    const metricsAt = (i: number): Record<string, number> => Object.fromEntries(log.keys.flatMap((k, c) => (Number.isNaN(log.columns[c]![i]!) ? [] : [[k, log.columns[c]![i]!]])));
    expect(metricsAt(0)).toEqual({ 'val-core/arithmetic/acc/mean@1': 0.1 });
    for (const stage of [1, 2]) {
      const want: Record<string, number> = { 'val-core/arithmetic/acc/mean@1': stage / 10 + 2 / 100 };
      for (let a = 0; a < 3; a++) Object.assign(want, { [`agent${a}/actor/ppo_kl`]: stage + a / 10, [`agent${a}/critic/score/mean`]: 0.5 });
      expect(metricsAt(stage), `stage ${stage}`).toEqual(want);
    }
    const again = start();
    expect(again.status, again.stderr).toBe(0);
    expect(again.stdout.match(/already trained/g)).toHaveLength(6);
    expect(readFileSync(record, 'utf8').trim().split('\n')).toHaveLength(6);
    // A port already taken (a server left from an earlier run would answer for the teammate): the
    // driver names it and starts nothing, rather than training against whatever listens there.
    rmSync(join(dir, 'team.verl-team', 'stage2-agent2', 'hf'), { recursive: true });
    const squatter = createServer();
    await new Promise<void>((done) => squatter.listen(port + 1, '127.0.0.1', done));
    try {
      const taken = start();
      expect(taken.status).not.toBe(0);
      expect(taken.stderr).toContain(`port ${port + 1} already in use`);
      expect(readFileSync(record, 'utf8').trim().split('\n')).toHaveLength(6);
    } finally {
      await new Promise((done) => squatter.close(done));
    }
  });
});

/**
 * The stand-ins above against verl's own code: tests/fixtures/bridge/verl.agent_loop.json holds, read
 * with Python's ast from the pinned commit, AgentLoopBase's constructor, attributes and methods, the
 * fields of AgentLoopOutput and TokenOutput and LLMServerClient.generate's parameters. The exported
 * loop may use only those (and must set every required output field); the stand-in base class must
 * have the same signatures.
 */
describe('verl_team_loop.py uses only what verl\'s agent-loop code has at the pinned commit', () => {
  it('its calls, attributes and output fields, and the stand-in\'s signatures, against the fixture', () => {
    const fixture = JSON.parse(readFileSync(join(import.meta.dirname, 'fixtures/bridge/verl.agent_loop.json'), 'utf8')) as {
      AgentLoopBase: { init: string[]; attributes: string[]; methods: Record<string, string[]> };
      AgentLoopOutput: { fields: Record<string, boolean> };
      'LLMServerClient.generate': string[];
      TokenOutput: { fields: Record<string, boolean> };
    };
    const dir = mkdtempSync(join(tmpdir(), 'sat-verl-api-'));
    writeFiles(dir, { ...STUBS, 'verl_team_loop.py': verlTeamLoopModule(), 'api.py': String.raw`
import ast, inspect, json
from verl.experimental.agent_loop.agent_loop import AgentLoopBase
tree = ast.parse(open("verl_team_loop.py").read())
cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "TeamAgentLoop")
own = {n.name for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
assigned = {t.attr for n in ast.walk(cls) if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Attribute)}
used = sorted({n.attr for n in ast.walk(cls) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self"} - own - assigned)
calls = {}
for n in ast.walk(tree):
    if isinstance(n, ast.Call):
        f = n.func
        name = ast.unparse(f)
        calls.setdefault(name, set()).update(k.arg for k in n.keywords)
token_attrs = sorted({n.attr for n in ast.walk(cls) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "output"})
def sig(f):
    out = []
    for p in inspect.signature(f).parameters.values():
        out.append(("**" if p.kind == p.VAR_KEYWORD else "*" if p.kind == p.VAR_POSITIONAL else "") + p.name)
    return out
print(json.dumps({"used": used, "generate": sorted(calls["self.server_manager.generate"]), "output": sorted(calls["AgentLoopOutput"]), "token": token_attrs,
    "stub": {m: sig(getattr(AgentLoopBase, m)) for m in ("__init__", "ct_build_initial_tokens", "ct_merge_assistant_token")}}))
` });
    const got = JSON.parse(python(dir, ['api.py'])) as { used: string[]; generate: string[]; output: string[]; token: string[]; stub: Record<string, string[]> };
    const known = [...fixture.AgentLoopBase.attributes, ...Object.keys(fixture.AgentLoopBase.methods)];
    expect(got.used.filter((a) => !known.includes(a))).toEqual([]);
    expect(got.used).toEqual(expect.arrayContaining(['ct_build_initial_tokens', 'ct_merge_assistant_token', 'server_manager', 'rollout_config', 'tokenizer', 'loop']));
    expect(got.generate.filter((k) => !fixture['LLMServerClient.generate'].includes(k))).toEqual([]);
    expect(got.output.filter((k) => !(k in fixture.AgentLoopOutput.fields))).toEqual([]);
    expect(Object.entries(fixture.AgentLoopOutput.fields).filter(([k, required]) => required && !got.output.includes(k))).toEqual([]);
    expect(got.token.filter((k) => !(k in fixture.TokenOutput.fields))).toEqual([]);
    for (const m of ['__init__', 'ct_build_initial_tokens', 'ct_merge_assistant_token']) expect(got.stub[m], m).toEqual(fixture.AgentLoopBase.methods[m]);
  });
});
