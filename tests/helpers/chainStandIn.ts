/**
 * The stand-ins of the chain tests (tests/bridge-chain.test.ts, tests/verl-team.test.ts,
 * tests/bridge-smoke.test.ts): the replies a scripted model might write for a problem and the hash
 * that picks one from a context (src/tasks/llm/types.ts hashString, in Python), and Python stand-ins
 * for the parts of TeamTR's and verl's packages the exported modules import.
 */
import type { Rng } from '../../src/core/rng';
import type { Problem } from '../../src/tasks/llm/index';

/** src/tasks/llm/types.ts hashString in Python: FNV-1a over UTF-16 code units, then the murmur3 finaliser. */
export const FNV_PY = String.raw`def fnv(s):
    b = s.encode("utf-16-le", "surrogatepass")
    h = 0x811C9DC5
    for i in range(0, len(b), 2):
        h ^= b[i] | (b[i + 1] << 8)
        h = (h * 0x01000193) & 0xFFFFFFFF
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & 0xFFFFFFFF
    h ^= h >> 16
    return h
`;

/** Replies a model might write for `p`: right, wrong, worded, boxed, with markers, empty, odd Unicode. */
export function candidates(p: Problem, rng: Rng): string[] {
  const nums = (p.meta.numbers as number[] | undefined)?.map(String) ?? [String(p.meta.a), String(p.meta.b)];
  const wrong = () => String(rng.int(40) - 10);
  return [p.answer, p.answer, ` ${p.answer}`, `The answer is ${p.answer}.`, `\\boxed{${p.answer}}`, `#### ${p.answer}`, wrong(), wrong(), `${nums.join('+')}`, `${nums[0]}-${nums[1] ?? nums[0]}`, `${p.answer}<sep>x`, `<a1>${p.answer}`, `${wrong()}<a2>`, '', '  ', 'é𝟘 ok', `${p.answer}\n${wrong()}`];
}

/**
 * TeamTR's packages as far as teamtr_rollout.py touches them: verl's DataProto, tensordict, the rollout
 * base class, and transformers' AutoTokenizer as a char-level tokenizer (ids 3.. are code points + 3;
 * 0 pad, 2 eos) with a chat template around the user turn.
 */
export const TEAMTR_STUBS: Record<string, string> = {
  'verl/__init__.py': 'class DataProto:\n    def __init__(self, batch=None, non_tensor_batch=None, meta_info=None):\n        self.batch = batch\n        self.non_tensor_batch = non_tensor_batch or {}\n        self.meta_info = meta_info or {}\n',
  'verl/workers/__init__.py': '',
  'verl/workers/rollout/__init__.py': 'from .multi_agent_hf_rollout import MultiAgentHFRollout\n',
  'verl/workers/rollout/multi_agent_hf_rollout.py': 'class MultiAgentHFRollout:\n    def __init__(self, modules, config):\n        self.modules = modules\n        self.config = config\n',
  'tensordict.py': 'class TensorDict(dict):\n    def __init__(self, d, batch_size):\n        super().__init__(d)\n        self.batch_size = batch_size\n',
  'transformers.py': [
    'class _Tok:',
    '    pad_token_id = 0',
    '    eos_token_id = 2',
    '    chat_template = "user/assistant"',
    '    def __call__(self, text, add_special_tokens=False):',
    '        return {"input_ids": [ord(c) + 3 for c in text]}',
    '    def decode(self, ids, skip_special_tokens=False):',
    '        return "".join(chr(i - 3) for i in ids if i >= 3)',
    '    def apply_chat_template(self, messages, tokenize=False, add_generation_prompt=True):',
    '        return "<|user|>" + messages[0]["content"] + "<|assistant|>"',
    'class AutoTokenizer:',
    '    @staticmethod',
    '    def from_pretrained(path, trust_remote_code=False):',
    '        return _Tok()',
    '',
  ].join('\n'),
};

/** verl's agent-loop module as far as the exported loop touches it (agent_loop.py:88, :207, :315, :383). */
export const AGENT_LOOP_STUB = String.raw`import asyncio
from types import SimpleNamespace


class AgentLoopOutput:
    def __init__(self, prompt_ids, response_ids, response_mask, metrics, response_logprobs=None, reward_score=None, num_turns=0, extra_fields=None, **kw):
        self.prompt_ids, self.response_ids, self.response_mask = prompt_ids, response_ids, response_mask
        self.response_logprobs, self.reward_score, self.num_turns = response_logprobs, reward_score, num_turns
        self.metrics, self.extra_fields = metrics, extra_fields or {}


class AgentLoopBase:
    def __init__(self, trainer_config, server_manager, tokenizer, processor, dataset_cls, data_config, hf_model_type=None, **kwargs):
        self.config = trainer_config.config
        self.rollout_config = self.config.actor_rollout_ref.rollout
        self.server_manager = server_manager
        self.tokenizer = tokenizer
        self.loop = asyncio.get_event_loop()

    async def ct_build_initial_tokens(self, messages, tools=None, images=None, videos=None, audios=None):
        return self.tokenizer.apply_chat_template(messages, tokenize=True, add_generation_prompt=True)

    async def ct_merge_assistant_token(self, runtime_token_ids, assistant_token_ids, response_mask, response_logprobs=None, assistant_logprobs=None):
        return SimpleNamespace(token_ids=list(runtime_token_ids) + list(assistant_token_ids)), list(response_mask) + [1] * len(assistant_token_ids), assistant_logprobs
`;

/** verl's packages for verl_team_loop.py: the agent-loop module above. */
export const VERL_STUBS: Record<string, string> = { 'verl/__init__.py': '', 'verl/experimental/__init__.py': '', 'verl/experimental/agent_loop/__init__.py': '', 'verl/experimental/agent_loop/agent_loop.py': AGENT_LOOP_STUB };
