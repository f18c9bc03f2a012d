/**
 * The team protocols on a real engine, as Python written beside the data by "Export for a real run"
 * for TeamTR (teamtr.ts) and verl (verl.ts): the part no engine has — agent j prompted with the
 * earlier agents' messages of the same episode, exactly as src/tasks/llm/protocols.ts `nextTurn`
 * builds it.
 *
 *   teamplay.py        the protocol logic, standard library only: the context each agent sees
 *                      (`build_context`), which dataset rows form one episode (`episodes_of_rows`)
 *                      and the turn-by-turn play of a batch of episodes with any generator (`play`).
 *                      tests/bridge-chain.test.ts drives it with a scripted stand-in model and holds
 *                      every context, message and team reward equal to the TypeScript protocol's.
 *   teamtr_rollout.py  ProtocolHFRollout: TeamTR's MultiAgentHFRollout
 *                      (verl/workers/rollout/multi_agent_hf_rollout.py:28) with generate_sequences
 *                      replaced — each turn's agent generates from the context `play` builds,
 *                      rendered with that agent's chat template, one sequence per row; each row
 *                      carries its episode's messages to reward.py (the reward manager passes a
 *                      rollout's `reward_scores` on: verl/workers/reward_manager/naive.py:83).
 *   sitecustomize.py   puts ProtocolHFRollout where TeamTR's worker looks for the rollout of
 *                      `rollout.name=multi_agent_hf` (verl/workers/fsdp_workers.py:495), in every
 *                      Python process started with the data folder on PYTHONPATH (Ray's workers too).
 *   verl_team_loop.py  (verl) TeamAgentLoop: a verl agent loop playing the chain with one agent
 *                      trained and the others answering from chat servers of their checkpoints.
 *   X.verl-team.py     (verl) the stage driver: one verl run per stage and agent (verl holds one
 *                      actor), the teammates' servers, each trained checkpoint merged for the next.
 *
 * TeamTR citations are Yydc/TeamTR @ e78ab037fcb6c91423f1368f3a561ab48006bc17, verl's are
 * verl-project/verl @ 1dda039b9c6311889a9c9a26040677e1254814f9. Not here: the reward
 * (rewardPy.ts), the rows (taskData.ts), the overrides (teamtr.ts).
 */
import { MAX_AGENTS, SEP } from '../tasks/llm/protocols';

/** The protocols the Python module plays: a row per agent and problem carries each. */
export const TEAM_PROTOCOLS = ['independent', 'chain'] as const;
export type TeamProtocol = (typeof TEAM_PROTOCOLS)[number];

/** The files, relative to the data folder. */
export const TEAM_FILES = { teamplay: 'teamplay.py', rollout: 'teamtr_rollout.py', site: 'sitecustomize.py' } as const;

/** teamplay.py for a team of `nAgents` playing `protocol`. */
export function teamplayModule(protocol: TeamProtocol, nAgents: number): string {
  return `"""SAT Playground's team protocol for a real run, exported by "Export for a real run".

Agent j's context is the problem prompt, then every earlier message of the same episode it may see
as <a_i> message <sep>, then its own marker <a_j> (docs/real-run.md): the playground's
src/tasks/llm/protocols.ts, to the character. Standard library only; reward.py sits beside it.
"""
from reward import clean_message

PROTOCOL = ${JSON.stringify(protocol)}
N_AGENTS = ${nAgents}
MAX_AGENTS = ${MAX_AGENTS}
SEP = ${JSON.stringify(SEP)}
` + String.raw`

def agent_marker(agent):
    if not isinstance(agent, int) or agent < 0 or agent >= MAX_AGENTS:
        raise ValueError("agent index must be an integer in [0, %d], got %r" % (MAX_AGENTS - 1, agent))
    return "<a%d>" % agent


def build_context(prompt, visible, agent):
    """The text agent sees: prompt, the visible (agent, text) messages cut at their first marker, its marker."""
    s = prompt
    for a, text in visible:
        s += agent_marker(a) + clean_message(text) + SEP
    return s + agent_marker(agent)


def episodes_of_rows(agents, keys, protocol=PROTOCOL, n_agents=N_AGENTS):
    """Lists of row indices, each one episode in speaking order, from a batch laid out as the export
    writes it and the trainer repeats it: per problem, agent 0's rows, then agent 1's, ..., each
    repeated once per sample (equal keys). independent: every row is an episode of its own."""
    if protocol == "independent":
        return [[i] for i in range(len(agents))]
    if protocol != "chain":
        raise ValueError("teamplay plays independent and chain, not " + repr(protocol))
    blocks = []
    for i, (a, k) in enumerate(zip(agents, keys)):
        if blocks and blocks[-1][0] == a and blocks[-1][1] == k:
            blocks[-1][2].append(i)
        else:
            blocks.append((a, k, [i]))
    if len(blocks) % n_agents != 0:
        raise ValueError("%d blocks of rows are not whole episodes of %d agents: read the rows in file order (data.shuffle=false)" % (len(blocks), n_agents))
    episodes = []
    for g in range(0, len(blocks), n_agents):
        group = blocks[g:g + n_agents]
        size = len(group[0][2])
        for j, (a, k, rows) in enumerate(group):
            if a != j or k != group[0][1] or len(rows) != size:
                raise ValueError("rows %d..%d are not one problem answered by agents 0..%d in turn with equal samples: read the rows in file order (data.shuffle=false)" % (group[0][2][0], group[-1][2][-1], n_agents - 1))
        episodes.extend([[group[j][2][s] for j in range(n_agents)] for s in range(size)])
    return episodes


def play(prompts, agents, episodes, generate, protocol=PROTOCOL):
    """Plays every episode turn by turn: at turn t each episode's t-th row gets its context (chain:
    the episode's earlier messages are visible) and generate(agent, rows, contexts) returns the
    texts, one call per agent and turn. Returns (contexts, texts) per row."""
    contexts = [None] * len(prompts)
    texts = [None] * len(prompts)
    turn = 0
    while True:
        due = {}
        for ep in episodes:
            if turn >= len(ep):
                continue
            row = ep[turn]
            visible = [(agents[r], texts[r]) for r in ep[:turn]] if protocol == "chain" else []
            contexts[row] = build_context(prompts[row], visible, agents[row])
            due.setdefault(agents[row], []).append(row)
        if not due:
            return contexts, texts
        for agent in sorted(due):
            rows = due[agent]
            out = generate(agent, rows, [contexts[r] for r in rows])
            if len(out) != len(rows):
                raise ValueError("generate returned %d texts for %d contexts" % (len(out), len(rows)))
            for r, text in zip(rows, out):
                texts[r] = text
        turn += 1


def team_record(episode, texts, protocol=PROTOCOL, n_agents=N_AGENTS):
    """What reward.py's team_reward grades for one episode: its messages in speaking order."""
    return {"protocol": protocol, "n_agents": n_agents, "messages": [texts[r] for r in episode]}
`;
}

/** teamtr_rollout.py: the rollout class TeamTR's worker builds for rollout.name=multi_agent_hf. */
export function teamtrRolloutModule(): string {
  return String.raw`"""SAT Playground's rollout for TeamTR, exported by "Export for a real run" (docs/real-run.md).

ProtocolHFRollout replaces TeamTR's MultiAgentHFRollout (verl/workers/rollout/multi_agent_hf_rollout.py)
for rollout.name=multi_agent_hf: the trainer hands it a batch of rows (per problem, one row per
agent, each repeated rollout.n times: verl/trainer/ppo/ray_trainer.py:1253) and it plays the team
protocol of teamplay.py turn by turn: each turn's agent generates from the context the protocol
builds, rendered with that agent's tokenizer's chat template when it has one, one sequence per
row. Every row carries its episode's messages in reward_scores, which reward.py's compute_score
grades as the team (verl/workers/reward_manager/naive.py:83 passes them on). TeamTR then updates
the agents one after another on their own rows (verl/workers/fsdp_workers.py:868).

It needs TeamTR's environment (torch, transformers, tensordict, verl). Where it was written it ran
only with torch and stand-ins for the rest (a char-level tokenizer, a scripted model), never with
real models, FSDP or Ray.
"""
import numpy as np

from verl.workers.rollout.multi_agent_hf_rollout import MultiAgentHFRollout

import teamplay


def _render(tokenizer, context):
    """The context as the agent's chat template's user turn, or as it is for a model without one."""
    if getattr(tokenizer, "chat_template", None):
        return tokenizer.apply_chat_template([{"role": "user", "content": context}], tokenize=False, add_generation_prompt=True)
    return context


class ProtocolHFRollout(MultiAgentHFRollout):
    """MultiAgentHFRollout playing the exported protocol (teamplay.PROTOCOL) across its agents."""

    def __init__(self, modules, config):
        super().__init__(modules=modules, config=config)
        self._tokenizers = {}

    def _tokenizer(self, agent):
        if agent not in self._tokenizers:
            from transformers import AutoTokenizer

            paths = list(self.config.get("agent_model_paths", None) or [])
            if agent >= len(paths):
                raise ValueError("rollout.agent_model_paths has no model for agent %d" % agent)
            tok = AutoTokenizer.from_pretrained(paths[agent], trust_remote_code=True)
            if tok.pad_token_id is None:
                tok.pad_token = tok.eos_token
            self._tokenizers[agent] = tok
        return self._tokenizers[agent]

    def _sampling(self, meta):
        """Sampling of one sequence per row (the trainer has already repeated each row rollout.n times)."""
        if not meta.get("do_sample", self.config.do_sample):
            return {"do_sample": False, "num_beams": 1}
        if meta.get("validate", False):
            v = self.config.val_kwargs
            return {"do_sample": True, "num_beams": 1, "top_k": max(0, v.top_k), "top_p": v.top_p, "temperature": v.temperature}
        return {
            "do_sample": True,
            "num_beams": 1,
            "top_k": max(0, meta.get("top_k", self.config.get("top_k", 0))),
            "top_p": meta.get("top_p", self.config.get("top_p", 1.0)),
            "temperature": meta.get("temperature", self.config.temperature),
        }

    def _generate(self, agent, contexts, meta, out):
        """Generates one reply per context with agent's module; stores (prompt ids, reply ids) in out."""
        import contextlib

        import torch
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

        tok = self._tokenizer(agent)
        encoded = [tok(_render(tok, c), add_special_tokens=False)["input_ids"] for c in contexts]
        width = max(len(e) for e in encoded)
        module = self.modules[agent]
        device = next(module.parameters()).device
        ids = torch.full((len(encoded), width), tok.pad_token_id, dtype=torch.long, device=device)
        mask = torch.zeros((len(encoded), width), dtype=torch.long, device=device)
        for i, e in enumerate(encoded):
            ids[i, width - len(e):] = torch.tensor(e, dtype=torch.long, device=device)
            mask[i, width - len(e):] = 1
        module.eval()
        summon = FSDP.summon_full_params(module, writeback=False, recurse=False) if isinstance(module, FSDP) else contextlib.nullcontext()
        with torch.no_grad(), summon:
            seq = module.generate(input_ids=ids, attention_mask=mask, max_new_tokens=self.config.response_length, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id, **self._sampling(meta))
        module.train()
        texts = []
        for i, e in enumerate(encoded):
            reply = seq[i, width:].tolist()
            if tok.eos_token_id in reply:
                reply = reply[: reply.index(tok.eos_token_id) + 1]
            out.append((e, reply))
            texts.append(tok.decode(reply, skip_special_tokens=True))
        return texts

    def generate_sequences(self, prompts):
        import torch
        from tensordict import TensorDict

        from verl import DataProto

        agents = prompts.batch["agent_id"].squeeze(-1).tolist()
        ids = prompts.batch["input_ids"]
        mask = prompts.batch["attention_mask"]
        keys, texts = [], []
        for i, a in enumerate(agents):
            row = ids[i][mask[i].bool()].tolist()
            keys.append(tuple(row))
            texts.append(self._tokenizer(a).decode(row, skip_special_tokens=False))
        episodes = teamplay.episodes_of_rows(agents, keys)
        made = {}

        def generate(agent, rows, contexts):
            out = []
            replies = self._generate(agent, contexts, prompts.meta_info, out)
            for r, pair in zip(rows, out):
                made[r] = pair
            return replies

        _, messages = teamplay.play(texts, agents, episodes, generate)
        reward_scores = [None] * len(agents)
        for ep in episodes:
            record = teamplay.team_record(ep, messages)
            for r in ep:
                reward_scores[r] = {"team": record}
        width = max(len(made[r][0]) for r in range(len(agents)))
        length = self.config.response_length
        pad = prompts.meta_info.get("pad_token_id", 0)
        n = len(agents)
        p_ids = torch.full((n, width), pad, dtype=torch.long)
        r_ids = torch.full((n, length), pad, dtype=torch.long)
        p_mask = torch.zeros((n, width), dtype=torch.long)
        r_mask = torch.zeros((n, length), dtype=torch.long)
        for r in range(n):
            prompt, reply = made[r]
            reply = reply[:length]
            p_ids[r, width - len(prompt):] = torch.tensor(prompt, dtype=torch.long)
            p_mask[r, width - len(prompt):] = 1
            r_ids[r, : len(reply)] = torch.tensor(reply, dtype=torch.long)
            r_mask[r, : len(reply)] = 1
        attention = torch.cat([p_mask, r_mask], dim=1)
        position = torch.clamp(torch.cumsum(attention, dim=1) - 1, min=0)
        batch = TensorDict(
            {"prompts": p_ids, "responses": r_ids, "input_ids": torch.cat([p_ids, r_ids], dim=1), "attention_mask": attention, "position_ids": position},
            batch_size=n,
        )
        return DataProto(batch=batch, non_tensor_batch={"reward_scores": np.array(reward_scores, dtype=object)})
`;
}

/** sitecustomize.py: swaps ProtocolHFRollout in for TeamTR's multi-agent rollout in every process. */
export function siteCustomizeModule(): string {
  return String.raw`"""SAT Playground: put teamtr_rollout.ProtocolHFRollout where TeamTR's worker builds the rollout of
rollout.name=multi_agent_hf (verl/workers/fsdp_workers.py:495 imports MultiAgentHFRollout from
verl.workers.rollout at that moment). Python runs this file in every process started with this
folder on PYTHONPATH, Ray's workers included; it changes nothing until verl.workers.rollout is
imported. Exported by "Export for a real run" (docs/real-run.md).
"""
import importlib.abc
import importlib.util
import sys

_TARGET = "verl.workers.rollout"


class _SwapRollout(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name != _TARGET:
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            from teamtr_rollout import ProtocolHFRollout

            module.MultiAgentHFRollout = ProtocolHFRollout
            sys.stderr.write("[sat-playground] rollout.name=multi_agent_hf runs teamtr_rollout.ProtocolHFRollout\n")

        spec.loader.exec_module = exec_module
        return spec


if not any(isinstance(f, _SwapRollout) for f in sys.meta_path):
    sys.meta_path.insert(0, _SwapRollout())
`;
}

/** The verl team files, relative to the data folder. */
export const VERL_TEAM_FILES = { loop: 'verl_team_loop.py' } as const;

/** The stage driver's file, beside the export's scripts. */
export function verlTeamDriverFile(name: string): string {
  return `${name}.verl-team.py`;
}

/** The name the agent loop is registered under in the per-run agent-loop config the driver writes. */
export const VERL_TEAM_LOOP = 'sat_team_agent';

/**
 * verl_team_loop.py: a verl agent loop (verl/experimental/agent_loop/agent_loop.py:207
 * AgentLoopBase) for one run of the stage driver, in which ONE agent of a chain is trained and its
 * teammates answer from servers of their current checkpoints. Per episode it plays the chain turn
 * by turn with teamplay.build_context, generates the trained agent's turn through verl's own server
 * (as single_turn_agent_loop.py:53–85 does) and returns that turn as the trajectory, with the
 * team's reward as reward_score, which verl takes as the trajectory's reward
 * (agent_loop.py:942 skips its reward function, :1062–1068 writes rm_scores).
 * Citations are verl-project/verl @ 1dda039b9c6311889a9c9a26040677e1254814f9.
 */
export function verlTeamLoopModule(): string {
  return String.raw`"""SAT Playground's chain protocol inside verl's agent loop, exported by "Export for a real run".

One run of verl_team.py trains ONE agent of the chain (verl holds one actor). TeamAgentLoop plays each
episode turn by turn: agent t's context is teamplay.build_context(prompt, earlier messages, t), the
playground's src/tasks/llm/protocols.ts to the character; the trained agent answers through verl's
rollout server (the trajectory verl trains on: its rendered context as prompt, its reply as
response), every other agent through an OpenAI-compatible chat server of its current checkpoint,
which applies that agent's chat template. The episode's last message is graded as the team's answer
by reward.py, and that reward is the trajectory's reward_score (verl then skips its own reward
function: verl/experimental/agent_loop/agent_loop.py:942, and writes rm_scores: :1062).

The driver names this class in the agent-loop config it writes for each run, with the trained
agent and its teammates' server URLs (agent_loop.py:504 reads the file; :653 instantiates the class
with those keys). Citations: verl-project/verl @ 1dda039b9c6311889a9c9a26040677e1254814f9.
"""
import json
import urllib.request
from uuid import uuid4

from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopOutput

import reward
import teamplay


def ask_teammate(url, agent, context, sampling_params, max_tokens, timeout=600):
    """One reply of teammate agent from its chat server at url (served as model "agent<i>")."""
    body = {"model": "agent%d" % agent, "messages": [{"role": "user", "content": context}], "max_tokens": max_tokens}
    for k in ("temperature", "top_p", "top_k"):
        if k in sampling_params:
            body[k] = sampling_params[k]
    request = urllib.request.Request(url.rstrip("/") + "/chat/completions", data=json.dumps(body).encode("utf-8"), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout) as r:
        reply = json.loads(r.read().decode("utf-8"))
    return reply["choices"][0]["message"]["content"] or ""


class TeamAgentLoop(AgentLoopBase):
    """A chain episode in which agent self.agent is the policy verl trains and the others are frozen."""

    def __init__(self, *args, agent=0, teammates=None, **kwargs):
        super().__init__(*args, **kwargs)
        if teamplay.PROTOCOL != "chain":
            raise ValueError("TeamAgentLoop plays the chain protocol; teamplay.py says " + repr(teamplay.PROTOCOL))
        self.agent = int(agent)
        if not 0 <= self.agent < teamplay.N_AGENTS:
            raise ValueError("trained agent %d is not one of the team's %d agents" % (self.agent, teamplay.N_AGENTS))
        self.teammates = {int(k): str(v) for k, v in dict(teammates or {}).items()}
        missing = [i for i in range(teamplay.N_AGENTS) if i != self.agent and i not in self.teammates]
        if missing:
            raise ValueError("no teammate server for agents %s (the agent-loop config's teammates)" % missing)
        self.response_length = self.rollout_config.response_length

    async def _own_turn(self, context, sampling_params):
        """The trained agent's reply through verl's server, tokenised as single_turn_agent_loop.py does."""
        prompt_ids = await self.ct_build_initial_tokens([{"role": "user", "content": context}])
        output = await self.server_manager.generate(request_id=uuid4().hex, prompt_ids=prompt_ids, sampling_params=sampling_params)
        merged, mask, logprobs = await self.ct_merge_assistant_token(
            prompt_ids,
            output.token_ids,
            [],
            [] if output.log_probs else None,
            assistant_logprobs=output.log_probs if output.log_probs else None,
        )
        response_ids = merged.token_ids[-len(mask):] if mask else []
        prompt_ids = merged.token_ids[: len(merged.token_ids) - len(mask)]
        n = self.response_length
        preempted = getattr(output, "num_preempted", None)
        return {
            "prompt_ids": prompt_ids,
            "response_ids": response_ids[:n],
            "response_mask": mask[:n],
            "logprobs": logprobs[:n] if logprobs else None,
            "metrics": {"num_preempted": preempted if preempted is not None else -1},
            "text": self.tokenizer.decode(response_ids[:n], skip_special_tokens=True),
        }

    async def run(self, sampling_params, **kwargs):
        prompt = list(kwargs["raw_prompt"])[-1]["content"]
        texts = []
        own = None
        for t in range(teamplay.N_AGENTS):
            context = teamplay.build_context(prompt, list(enumerate(texts)), t)
            if t == self.agent:
                own = await self._own_turn(context, sampling_params)
                texts.append(own["text"])
            else:
                texts.append(await self.loop.run_in_executor(None, ask_teammate, self.teammates[t], t, context, sampling_params, self.response_length))
        record = teamplay.team_record(list(range(teamplay.N_AGENTS)), texts)
        score = reward.compute_score(kwargs["data_source"], texts[-1], kwargs["reward_model"]["ground_truth"], {"rollout_reward_scores": {"team": record}})
        return AgentLoopOutput(
            prompt_ids=own["prompt_ids"],
            response_ids=own["response_ids"],
            response_mask=own["response_mask"],
            response_logprobs=own["logprobs"],
            reward_score=float(score),
            num_turns=2,
            metrics=own["metrics"],
            extra_fields={"turn_scores": [], "tool_rewards": []},
        )
`;
}

/** What the stage driver needs to know of the export. */
export interface VerlTeam {
  readonly name: string;
  readonly agents: number;
  readonly stages: number;
  readonly batch: number;
  /** The agents in update order every stage. */
  readonly order: readonly number[];
  /** Each agent's starting checkpoint (Hugging Face id). */
  readonly models: readonly string[];
  /** verl's overrides of the export ($DATA: the data folder, $PWD: where the driver runs). */
  readonly overrides: readonly string[];
  /** Tokens of a teammate server's context window: the longest context and a reply. */
  readonly maxModelLen: number;
  /** The data folder, relative to the driver, and the exported training rows in it. */
  readonly dataDir: string;
  readonly trainFile: string;
}

/**
 * verl_team.py: the stage driver. verl's trainer holds one actor, so a team is trained as one short
 * verl run per agent and stage (one training step on the stage's problems), in update order; the
 * teammates of the run are served from their current checkpoints, and the trained checkpoint is
 * merged back to a Hugging Face folder (verl/model_merger) for the next run.
 */
export function verlTeamDriverModule(team: VerlTeam): string {
  return `"""SAT Playground: the ${team.agents}-agent chain of ${team.name} on verl, agent by agent, exported by "Export for a real run".

verl's trainer holds one actor (verl/trainer/ppo/ray_trainer.py), so its agent loop cannot update the
agents one at a time. This script runs SAT's sequential scheme across verl runs instead: every stage,
for each agent in order, ONE verl run of one training step on that stage's ${team.batch} problems
trains that agent while its teammates answer from servers of their current checkpoints (the agent
loop verl_team_loop.py plays the chain); the trained checkpoint is merged to a Hugging Face folder
(python3 -m verl.model_merger merge) and is that agent's model from then on. So each agent's episodes
are fresh, played with its predecessors' updated models, as the playground's estimator resample.

Usage (from the folder the export was written to):  python3 ${team.name}.verl-team.py [--dry-run]
After every run it writes ${team.name}.verl-team-log.jsonl: the team's log in TeamTR's shape (per stage,
each agent's metrics as agent<j>/..., the held-out score after the stage), which Import reads.
Standard library only; needs verl and vLLM (the teammates' servers: vllm serve) on a GPU machine.
"""
import argparse
import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request

TEAM = json.loads(${JSON.stringify(JSON.stringify(team))})
DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), TEAM["dataDir"])
LOOP = ${JSON.stringify(VERL_TEAM_LOOP)}
` + String.raw`

def hydra_value(v):
    """A value as Hydra's override grammar wants it (the export's hydraValue)."""
    return v if re.match(r"^[\w./:@$\{\}-]+$", v) else "'" + v + "'"


def key_of(override):
    return override.split("=", 1)[0]


def plan(work, data=DATA, team=TEAM, base_port=8100):
    """The runs in order: per stage, per agent of the order, the verl overrides, the teammates'
    servers (each agent's current checkpoint) and where the trained checkpoint is merged."""
    current = list(team["models"])
    runs = []
    first = True
    for stage in range(1, team["stages"] + 1):
        for agent in team["order"]:
            tag = "stage%d-agent%d" % (stage, agent)
            root = os.path.join(work, team["name"] + ".verl-team", tag)
            teammates = {i: {"model": current[i], "port": base_port + i, "url": "http://127.0.0.1:%d/v1" % (base_port + i)} for i in range(team["agents"]) if i != agent}
            own = [
                ("data.train_files", os.path.join(work, team["name"] + ".verl-team", "stage%d.train.jsonl" % stage)),
                ("actor_rollout_ref.model.path", current[agent]),
                ("actor_rollout_ref.rollout.agent.agent_loop_config_path", os.path.join(root, "agent_loop.json")),
                ("actor_rollout_ref.rollout.agent.default_agent_loop", LOOP),
                ("trainer.total_training_steps", "1"),
                ("trainer.save_freq", "1"),
                ("trainer.resume_mode", "disable"),
                ("trainer.val_before_train", "true" if first else "false"),
                ("trainer.default_local_dir", os.path.join(root, "checkpoints")),
                ("trainer.experiment_name", "%s-%s" % (team["name"], tag)),
                ("trainer.rollout_data_dir", os.path.join(root, "generations", "train")),
                ("trainer.validation_data_dir", os.path.join(root, "generations", "val")),
            ]
            mine = set(k for k, _ in own)
            base = [o.replace("$DATA", data).replace("$PWD", work) for o in team["overrides"] if key_of(o) not in mine]
            merged = os.path.join(root, "hf")
            runs.append({
                "stage": stage,
                "train_file": own[0][1],
                "agent": agent,
                "model": current[agent],
                "teammates": teammates,
                "overrides": base + ["%s=%s" % (k, hydra_value(v)) for k, v in own],
                "root": root,
                "loop_config": [{"name": LOOP, "_target_": "verl_team_loop.TeamAgentLoop", "agent": agent, "teammates": {str(i): t["url"] for i, t in teammates.items()}}],
                "log": os.path.join(root, "verl-log.jsonl"),
                "checkpoint": os.path.join(root, "checkpoints", "global_step_1", "actor"),
                "merged": merged,
            })
            current[agent] = merged
            first = False
    return runs


def stage_rows(train_lines, stage, batch=TEAM["batch"]):
    """The stage's problems: rows (stage-1)*batch .. stage*batch-1 of the exported training file."""
    rows = train_lines[(stage - 1) * batch: stage * batch]
    if len(rows) != batch:
        raise ValueError("the training file has %d rows; stage %d needs rows %d..%d" % (len(train_lines), stage, (stage - 1) * batch, stage * batch - 1))
    return rows


def read_log(path):
    """verl's file log ({"step": N, "data": {...}} lines) as {step: data}; a missing file is empty."""
    out = {}
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                try:
                    rec = json.loads(line)
                    out[int(rec["step"])] = rec["data"]
                except (ValueError, KeyError, TypeError):
                    continue
    return out


def team_log(runs):
    """One log of the whole team in verl's file-log format, as TeamTR's: step 0 the held-out score before
    training, step s the stage, each agent's metrics of its run as agent<j>/..., and the held-out score
    (val-* keys) after the stage's last run. Stages not run to the end are left out."""
    lines = []
    first = read_log(runs[0]["log"]) if runs else {}
    if 0 in first:
        lines.append({"step": 0, "data": first[0]})
    by_stage = {}
    for run in runs:
        by_stage.setdefault(run["stage"], []).append(run)
    for stage in sorted(by_stage):
        data, last = {}, None
        for run in by_stage[stage]:
            steps = read_log(run["log"])
            trained = {k: v for k, v in steps.items() if k > 0}
            if not trained:
                return lines
            last = trained[max(trained)]
            for k, v in last.items():
                if not k.startswith("val-"):
                    data["agent%d/%s" % (run["agent"], k)] = v
        data.update({k: v for k, v in last.items() if k.startswith("val-")})
        lines.append({"step": stage, "data": data})
    return lines


def port_in_use(port):
    """Whether something already listens on 127.0.0.1:port (a server left over from an earlier run
    would otherwise answer in place of the teammate this run starts, with the wrong checkpoint)."""
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def wait_ready(url, proc, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("the teammate server for %s exited with %s before it was ready" % (url, proc.returncode))
        try:
            with urllib.request.urlopen(url + "/models", timeout=5):
                return
        except Exception:
            time.sleep(0.5)
    raise RuntimeError("the teammate server for %s was not ready in %d s" % (url, timeout))


def execute(run, args, train_lines):
    os.makedirs(run["root"], exist_ok=True)
    with open(run["train_file"], "w") as f:
        f.writelines(stage_rows(train_lines, run["stage"]))
    with open(os.path.join(run["root"], "agent_loop.json"), "w") as f:
        json.dump(run["loop_config"], f)
    busy = [t["port"] for t in run["teammates"].values() if port_in_use(t["port"])]
    if busy:
        raise SystemExit("[sat-playground] port %s already in use: stop what listens there or pass another --base-port" % ", ".join(map(str, sorted(busy))))
    servers = []
    try:
        for i, t in sorted(run["teammates"].items()):
            cmd = args.vllm.split() + ["serve", t["model"], "--port", str(t["port"]), "--served-model-name", "agent%d" % i, "--gpu-memory-utilization", str(args.teammate_gpu_memory), "--max-model-len", str(TEAM["maxModelLen"])]
            servers.append((t["url"], subprocess.Popen(cmd)))
        for url, proc in servers:
            wait_ready(url, proc, args.server_timeout)
        env = dict(os.environ, VERL_FILE_LOGGER_PATH=run["log"], PYTHONPATH=DATA + (os.pathsep + os.environ["PYTHONPATH"] if os.environ.get("PYTHONPATH") else ""))
        subprocess.run([sys.executable, "-m", "verl.trainer.main_ppo"] + run["overrides"], env=env, check=True)
    finally:
        for _, proc in servers:
            proc.terminate()
        for _, proc in servers:
            proc.wait()
    subprocess.run([sys.executable, "-m", "verl.model_merger", "merge", "--backend", "fsdp", "--local_dir", run["checkpoint"], "--target_dir", run["merged"]], check=True)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dry-run", action="store_true", help="print the runs as JSON lines and run nothing")
    p.add_argument("--work", default=os.getcwd(), help="where checkpoints, logs and dumps go (default: here)")
    p.add_argument("--vllm", default="vllm", help="the vLLM command that serves the teammates")
    p.add_argument("--teammate-gpu-memory", type=float, default=0.1, help="each teammate server's share of the GPU (vllm --gpu-memory-utilization)")
    p.add_argument("--server-timeout", type=int, default=900, help="seconds a teammate server may take to start")
    p.add_argument("--base-port", type=int, default=8100, help="agent i's server listens on base-port + i")
    args = p.parse_args(argv)
    runs = plan(os.path.abspath(args.work), base_port=args.base_port)
    if args.dry_run:
        for run in runs:
            print(json.dumps(run))
        return
    with open(os.path.join(DATA, TEAM["trainFile"])) as f:
        train_lines = f.readlines()
    for run in runs:
        if os.path.exists(os.path.join(run["merged"], "config.json")):
            print("[sat-playground] stage %d agent %d: already trained (%s)" % (run["stage"], run["agent"], run["merged"]))
            continue
        print("[sat-playground] stage %d agent %d: training %s; teammates %s" % (run["stage"], run["agent"], run["model"], {i: t["model"] for i, t in run["teammates"].items()}))
        execute(run, args, train_lines)
        with open(os.path.join(os.path.abspath(args.work), TEAM["name"] + ".verl-team-log.jsonl"), "w") as f:
            for line in team_log(runs):
                f.write(json.dumps(line) + "\n")


if __name__ == "__main__":
    main()
`;
}
