/**
 * The task's verifier as a Python reward module (standard library only), written beside the
 * dataset by "Export for a real run": the same rules as the TypeScript verifiers and protocols
 * (arithmetic.ts `verifyInteger`, countdown.ts `verifyCountdown` with JavaScript's doubles,
 * types.ts `preCheck` in UTF-16 units, protocols.ts `cleanMessage` and `teamVerdict`, answer.ts
 * `extractAnswer` for the `rewardMode` setting), exposing
 * verl's `compute_score(data_source, solution_str, ground_truth, extra_info)` and
 * `team_reward(protocol, n_agents, messages, ground_truth, sample)` for a whole episode.
 * tests/bridge-reward.test.ts requires python3's rewards to equal the TypeScript ones exactly.
 *
 * Not here: the dataset rows (taskData.ts), the engines' configs.
 */
import type { LlmTaskName } from '../tasks/llm/index';
import { MAX_VERIFY_CHARS } from '../tasks/llm/types';
import { MAX_LITERAL_DIGITS, MAX_PAREN_DEPTH } from '../tasks/llm/countdown';
import { SPECIAL_MARKERS } from '../tasks/llm/protocols';
import { dataSource } from './taskData';
import { MAX_EXTRACT_CHARS, type RewardMode } from './answer';

/** The Python source of the reward module for `task` with the given format reward and answer extraction. */
export function rewardModule(task: LlmTaskName, formatReward: number, mode: RewardMode = 'strict'): string {
  return `"""SAT Playground reward for the ${task} task, exported by "Export for a real run".

compute_score(data_source, solution_str, ground_truth, extra_info=None) is verl's custom reward
function (reward.custom_reward_function.path=<this file>, name=compute_score); team_reward(...)
grades a whole episode of the playground's protocols. The rules are the playground's verifiers
(docs/real-run.md): standard library only, no eval. REWARD_MODE "strict" grades a whole message as
the playground does; "extract" grades the answer pulled out of a longer reply (extract_answer).
"""
import json
import re

TASK = ${JSON.stringify(task)}
DATA_SOURCE = ${JSON.stringify(dataSource(task))}
FORMAT_REWARD = ${formatReward}
REWARD_MODE = ${JSON.stringify(mode)}
MAX_EXTRACT_CHARS = ${MAX_EXTRACT_CHARS}
MAX_VERIFY_CHARS = ${MAX_VERIFY_CHARS}
MAX_PAREN_DEPTH = ${MAX_PAREN_DEPTH}
MAX_LITERAL_DIGITS = ${MAX_LITERAL_DIGITS}
MARKERS = ${JSON.stringify(SPECIAL_MARKERS)}

# JavaScript's String.prototype.trim: WhiteSpace and LineTerminator code points.
_JS_SPACE = "\\t\\n\\u000b\\f\\r \\u00a0\\u1680\\u2000\\u2001\\u2002\\u2003\\u2004\\u2005\\u2006\\u2007\\u2008\\u2009\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff"


def _js_trim(s):
    return s.strip(_JS_SPACE)


def _utf16_len(s):
    return len(s.encode("utf-16-le", "surrogatepass")) // 2


def clean_message(text):
    """A message cut at the first turn / end marker it contains."""
    cut = len(text)
    for m in MARKERS:
        at = text.find(m)
        if 0 <= at < cut:
            cut = at
    return text[:cut]


def _pre_check(answer):
    """The trimmed answer, or None when it scores 0 before being read."""
    if not isinstance(answer, str) or _utf16_len(answer) > MAX_VERIFY_CHARS:
        return None
    t = _js_trim(answer)
    return t if t else None


# -- arithmetic -------------------------------------------------------------------------------

_INTEGER = re.compile(r"-?[0-9]{1,12}")


def verify_integer(expected, answer):
    """(reward, parsed): 1 for the right integer, FORMAT_REWARD for another integer, else 0."""
    t = _pre_check(answer)
    if t is None or _INTEGER.fullmatch(t) is None:
        return 0.0, None
    v = int(t)
    parsed = str(v)
    return (1.0 if v == expected else float(FORMAT_REWARD)), parsed


# -- countdown --------------------------------------------------------------------------------

class _ParseFail(Exception):
    pass


def _parse(text):
    """An expression tree over digits, + - * ( ) and spaces, or None. Trees: ("num", text, value)
    or ("bin", op, left, right)."""
    for c in text:
        if not (c in "0123456789+-*() "):
            return None
    pos = [0]

    def skip():
        while pos[0] < len(text) and text[pos[0]] == " ":
            pos[0] += 1

    def factor(depth):
        skip()
        c = text[pos[0]] if pos[0] < len(text) else None
        if c == "(":
            if depth >= MAX_PAREN_DEPTH:
                raise _ParseFail()
            pos[0] += 1
            e = expr(depth + 1)
            skip()
            if pos[0] >= len(text) or text[pos[0]] != ")":
                raise _ParseFail()
            pos[0] += 1
            return e
        if c is not None and "0" <= c <= "9":
            start = pos[0]
            while pos[0] < len(text) and "0" <= text[pos[0]] <= "9":
                pos[0] += 1
            lit = text[start:pos[0]]
            if len(lit) > MAX_LITERAL_DIGITS:
                raise _ParseFail()
            return ("num", lit, float(int(lit)))
        raise _ParseFail()

    def term(depth):
        left = factor(depth)
        while True:
            skip()
            if pos[0] >= len(text) or text[pos[0]] != "*":
                return left
            pos[0] += 1
            left = ("bin", "*", left, factor(depth))

    def expr(depth):
        left = term(depth)
        while True:
            skip()
            c = text[pos[0]] if pos[0] < len(text) else None
            if c != "+" and c != "-":
                return left
            pos[0] += 1
            left = ("bin", c, left, term(depth))

    try:
        e = expr(0)
        skip()
        return e if pos[0] == len(text) else None
    except _ParseFail:
        return None


_PREC = {"+": 1, "-": 1, "*": 2}


def _print(e):
    """The expression with the fewest parentheses that keep its meaning (the canonical form)."""
    if e[0] == "num":
        return e[1]
    op, left, right = e[1], e[2], e[3]

    def side(c, is_right):
        s = _print(c)
        if c[0] == "num":
            return s
        cp = _PREC[c[1]]
        needs = cp < _PREC[op] or (is_right and cp == _PREC[op] and op == "-")
        return "(" + s + ")" if needs else s

    return side(left, False) + op + side(right, True)


def _literals(e, out):
    if e[0] == "num":
        out.append(e[1])
    else:
        _literals(e[2], out)
        _literals(e[3], out)
    return out


def _evaluate(e):
    """Integer evaluation in IEEE doubles, as the playground's JavaScript does."""
    if e[0] == "num":
        return e[2]
    a, b = _evaluate(e[2]), _evaluate(e[3])
    return a + b if e[1] == "+" else a - b if e[1] == "-" else a * b


def verify_countdown(numbers, target, answer):
    """(reward, parsed): 1 when the expression uses the given numbers legally and equals the
    target, FORMAT_REWARD when legal but off target, else 0."""
    t = _pre_check(answer)
    if t is None:
        return 0.0, None
    e = _parse(t)
    if e is None:
        return 0.0, None
    parsed = _print(e)
    given = {}
    for n in numbers:
        given[str(n)] = given.get(str(n), 0) + 1
    used = {}
    for lit in _literals(e, []):
        if lit not in given:
            return 0.0, parsed
        used[lit] = used.get(lit, 0) + 1
        if used[lit] > given[lit]:
            return 0.0, parsed
    return (1.0 if _evaluate(e) == target else float(FORMAT_REWARD)), parsed


# -- answer extraction (REWARD_MODE "extract") -------------------------------------------------

_NUMBER = re.compile(r"-?[0-9]+(?:,[0-9]{3})*(?:\\.[0-9]+)?")
_TRAILING_VALUE = re.compile(r"[ \\t]*-?[0-9]+[ \\t]*")
_BOXED = "\\\\boxed{"


def _last_boxed(text):
    at = text.rfind(_BOXED)
    if at < 0:
        return None
    depth = 1
    for i in range(at + len(_BOXED), len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return text[at + len(_BOXED):i]
    return None


def _last_number(region):
    last = None
    for m in _NUMBER.finditer(region):
        last = m.group(0)
    if last is None:
        return None
    s = last.replace(",", "")
    dot = s.find(".")
    if dot >= 0 and s[dot + 1:].strip("0") == "":
        s = s[:dot]
    return s


def _bare_expression(line):
    s = _js_trim(line)
    if s.endswith("."):
        s = _js_trim(s[:-1])
    eq = s.rfind("=")
    if eq >= 0 and _TRAILING_VALUE.fullmatch(s[eq + 1:]) is not None:
        s = _js_trim(s[:eq])
    return s


def extract_answer(text):
    """The answer REWARD_MODE reads from a (marker-cleaned) reply: the reply itself when strict; else
    the last \\\\boxed{...}, else the text after the last ####, else the last number (arithmetic) or
    the last non-empty line (countdown), with a countdown line's final "." and "= N" dropped."""
    if REWARD_MODE == "strict" or not isinstance(text, str) or _utf16_len(text) > MAX_EXTRACT_CHARS:
        return text
    boxed = _last_boxed(text)
    hash_at = text.rfind("####") if boxed is None else -1
    marked = boxed if boxed is not None else (text[hash_at + 4:] if hash_at >= 0 else None)
    if TASK == "arithmetic":
        region = marked if marked is not None else text
        n = _last_number(region)
        return n if n is not None else region
    if marked is not None:
        return _bare_expression(marked)
    lines = [l for l in text.split("\\n") if _js_trim(l) != ""]
    return _bare_expression(lines[-1]) if lines else text


# -- one answer, one episode ------------------------------------------------------------------

def _verify(answer, ground_truth):
    answer = extract_answer(answer)
    if TASK == "arithmetic":
        return verify_integer(int(ground_truth), answer)
    nums, target = str(ground_truth).split(">")
    return verify_countdown([int(x) for x in nums.split(",")], int(target), answer)


def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    """verl's reward function: the reward of one answer (its text cut at the first marker), or, when
    the rollout handed over its episode (extra_info["rollout_reward_scores"]["team"], as
    teamtr_rollout.py does), the team's reward for that episode."""
    if data_source != DATA_SOURCE:
        raise ValueError("reward.py grades " + DATA_SOURCE + " rows, got data_source " + repr(data_source))
    scores = extra_info.get("rollout_reward_scores") if isinstance(extra_info, dict) else None
    team = scores.get("team") if isinstance(scores, dict) else None
    if team is not None:
        return team_reward(team["protocol"], team["n_agents"], team["messages"], ground_truth)
    return _verify(clean_message(solution_str), ground_truth)[0]


def _route(text, n_agents):
    t = _js_trim(clean_message(text)) if isinstance(text, str) else ""
    if len(t) == 1 and "1" <= t <= str(n_agents - 1):
        return int(t)
    return None


def team_reward(protocol, n_agents, messages, ground_truth, sample=0):
    """The reward of a finished episode: messages are the texts in speaking order (vote: agent
    order; router: the route, then the solver's answer)."""
    if protocol == "independent":
        return _verify(clean_message(messages[0]), ground_truth)[0]
    if protocol == "chain":
        return _verify(clean_message(messages[-1]), ground_truth)[0]
    if protocol == "vote":
        verdicts = [_verify(clean_message(m), ground_truth) for m in messages]
        tally = {}
        for agent, (_, parsed) in enumerate(verdicts):
            if parsed is not None:
                tally.setdefault(parsed, []).append(agent)
        if not tally:
            return 0.0
        best = max(len(a) for a in tally.values())
        winner = next(a for a in tally.values() if len(a) == best)
        return verdicts[winner[0]][0]
    if protocol == "router":
        if _route(messages[0], n_agents) is None:
            return 0.0
        return _verify(clean_message(messages[1]), ground_truth)[0]
    raise ValueError("unknown protocol " + repr(protocol))


if __name__ == "__main__":
    # Reads {"episodes": [{protocol, n_agents, messages, ground_truth}], "answers": [[data_source,
    # solution_str, ground_truth]]} on stdin; prints {"team": [...], "single": [...], "extracted":
    # [...]} (extracted: the answer each solution_str is graded on).
    import sys

    job = json.load(sys.stdin)
    out = {
        "team": [team_reward(e["protocol"], e["n_agents"], e["messages"], e["ground_truth"]) for e in job.get("episodes", [])],
        "single": [compute_score(a[0], a[1], a[2]) for a in job.get("answers", [])],
        "extracted": [extract_answer(clean_message(a[1])) for a in job.get("answers", [])],
    }
    json.dump(out, sys.stdout)
`;
}
