/**
 * The team protocols on a real engine, as Python written beside the data by "Export for a real run"
 * for TeamTR (teamtr.ts): the part no engine has — agent j prompted with the earlier agents'
 * messages of the same episode, exactly as src/tasks/llm/protocols.ts `nextTurn` builds it.
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
 *
 * Citations are Yydc/TeamTR @ e78ab037fcb6c91423f1368f3a561ab48006bc17. Not here: the reward
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
