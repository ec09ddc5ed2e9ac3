"""Checks of the Studio's DrMAS hook and veRL reward function with plain python3 (issue 38).

DrMAS itself cannot be installed here, so the modules the hook patches are stood in by minimal
packages written below (same module paths and the attributes the hook touches: their shapes are
DrMAS@19c632bc's, their bodies are this test's). Run by test/engines/python-hook.test.ts as
    python3 hook_checks.py RESOURCES_DIR TEMP_DIR
It prints one JSON line of results; any failed assertion exits non-zero with the traceback.
"""
import json
import os
import sys
import textwrap

resources, tmp = sys.argv[1], sys.argv[2]
os.makedirs(tmp, exist_ok=True)
sys.path.insert(0, os.path.join(resources, "engines", "drmas"))
sys.path.insert(0, os.path.join(resources, "engines", "verl"))
sys.path.insert(0, tmp)
sys.dont_write_bytecode = True

import marsrl_drmas_hook as hook  # noqa: E402
import marsrl_reward as reward  # noqa: E402

results = {}

# ── Pure functions ───────────────────────────────────────────────────────────────────────────
assert hook.dup_flags(["a", "b", "a", "c", "b"]) == [0, 0, 1, 0, 1]
assert hook.first_response_value([0.5, 0.5, 0.0], [1, 1, 0]) == 0.5
assert hook.first_response_value([9.0, 2.5, 2.5], [0, 1, 1]) == 2.5
assert hook.first_response_value([1.0], [0]) is None
S, V, C = hook.SOLVER_AGENT, hook.VERIFIER_AGENT, hook.CORRECTOR_AGENT
assert hook.chain_schedule(2, [S, V, C]) == [S, V, C, V, C]
assert hook.chain_schedule(2, [S, V]) == [S, V]
assert hook.chain_schedule(0, [S, V, C]) == [S]

extras = hook.dump_extras(
    {"agent_id": [S, V, S], "wg_id": ["m_Solver Agent", "m_Verifier Agent", "m_Solver Agent"], "uid": ["u", "u", "u"], "traj_uid": ["t1", "t1", "t1"],
     "env_step": [1, 1, 1], "marsrl_turn": [0, 1, 0], "marsrl_round": [0, 0, 0], "is_action_valid": [True, False, True], "other": [1, 2]},
    3, ["p0", "p1", "p0"], ["o0", "o1", "o0"], [[0.7, 0.7], [-0.3, -0.3], [0.7, 0.7]], [[1, 1], [1, 0], [1, 1]],
)
assert extras == {
    "agent_id": [S, V, S], "wg_id": ["m_Solver Agent", "m_Verifier Agent", "m_Solver Agent"], "uid": ["u", "u", "u"], "traj_uid": ["t1", "t1", "t1"],
    "env_step": [1, 1, 1], "turn": [0, 1, 0], "round": [0, 0, 0], "is_action_valid": [1, 0, 1], "advantage": [0.7, -0.3, 0.7], "dup": [0, 0, 1],
}, extras
results["pure"] = "ok"

# ── The modules the hook patches, stood in ───────────────────────────────────────────────────
def write(rel, text):
    path = os.path.join(tmp, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(textwrap.dedent(text))

for pkg in ["verl", "verl/trainer", "verl/trainer/ppo", "agent_system", "agent_system/agent", "agent_system/agent/agents", "agent_system/agent/orchestra", "agent_system/multi_turn_rollout"]:
    write(f"{pkg}/__init__.py", "")
write("verl/trainer/ppo/ray_trainer.py", """
    DUMPS = []
    def combine_batches(split):
        return split["all"]
    class RayPPOTrainer:
        def _dump_generations(self, inputs, outputs, scores, reward_extra_infos_dict, dump_path):
            DUMPS.append({"n": len(inputs), **reward_extra_infos_dict})
        def fit_step(self, split, inputs, outputs):
            batch = combine_batches(split)
            self._dump_generations(inputs=inputs, outputs=outputs, scores=[0.0] * len(inputs), reward_extra_infos_dict={}, dump_path="/x")
""")
write("agent_system/agent/registry.py", """
    class AgentRegistry:
        _REGISTRY = {}
        @classmethod
        def register(cls, name):
            def decorator(agent_cls):
                if name in cls._REGISTRY:
                    raise ValueError(f"Agent '{name}' already registered.")
                cls._REGISTRY[name] = agent_cls
                return agent_cls
            return decorator
        @classmethod
        def names(cls):
            return list(cls._REGISTRY)
""")
write("agent_system/agent/agents/base.py", """
    class BaseAgent:
        def __init__(self, name, prompt, wg_id, tokenizer, processor, config):
            self.name, self.prompt, self.wg_id = name, prompt, wg_id
""")
write("agent_system/agent/utils.py", "def math_projection(texts, check_think_tag=False):\n    return texts, [('boxed' in t) for t in texts]\n")
write("agent_system/multi_turn_rollout/utils.py", "def preprocess_batch(**kwargs):\n    return None\n")
write("agent_system/agent/orchestra/base.py", """
    class BaseOrchestra:
        def __init__(self):
            self.multiagent_batch_buffer = []
        def reset_buffer(self):
            self.multiagent_batch_buffer.clear()
        def save_to_buffer(self, name, batch):
            self.multiagent_batch_buffer.append({"agent_id": name, "batch": batch})
        def initialize_context(self, env_obs):
            n = len(env_obs["text"])
            return ["" for _ in range(n)], ["" for _ in range(n)], env_obs
""")
write("agent_system/agent/orchestra/math/__init__.py", "from .math_orchestra import MathMultiAgentOrchestra\n")
write("agent_system/agent/orchestra/math/math_orchestra.py", """
    from agent_system.agent.orchestra.base import BaseOrchestra
    def update_team_context(agent_id, team_context, text_response, agent_active_mask=None):
        return [c + (f'|{agent_id}:{t}' if m else '') for c, t, m in zip(team_context, text_response, agent_active_mask)]
    def update_text_action(text_actions, text_response, agent_active_mask=None):
        return [t if m else a for a, t, m in zip(text_actions, text_response, agent_active_mask)]
    class MathMultiAgentOrchestra(BaseOrchestra):
        SOLVER_AGENT = "Solver Agent"
        VERIFIER_AGENT = "Verifier Agent"
        def run(self, *args, **kwargs):
            raise AssertionError("DrMAS's own loop ran instead of MarsRL's")
""")

import importlib  # noqa: E402

importlib.invalidate_caches()
os.environ["MARSRL_DRMAS_ORCHESTRA"] = "marsrl"
hook.install()
hook.install()  # twice is harmless (Ray may run it once per worker start)
assert sum(isinstance(f, hook._PatchingFinder) for f in sys.meta_path) == 1

# ── The dump gets the batch's fields ─────────────────────────────────────────────────────────
import verl.trainer.ppo.ray_trainer as rt  # noqa: E402


class Batch:
    def __init__(self, n, non_tensor, tensors):
        self.n, self.non_tensor_batch, self.batch = n, non_tensor, tensors

    def __len__(self):
        return self.n


batch = Batch(2, {"agent_id": [S, C], "wg_id": ["w1", "w2"], "uid": ["u", "u"], "traj_uid": ["t", "t"], "env_step": [1, 1], "marsrl_turn": [0, 2], "marsrl_round": [0, 0], "is_action_valid": [1, 1]},
              {"advantages": [[1.5, 1.5], [-1.0, -1.0]], "response_mask": [[1, 0], [1, 1]]})
rt.RayPPOTrainer().fit_step({"all": batch}, ["p", "q"], ["a", "b"])
assert rt.DUMPS[-1] == {"n": 2, "agent_id": [S, C], "wg_id": ["w1", "w2"], "uid": ["u", "u"], "traj_uid": ["t", "t"], "env_step": [1, 1], "turn": [0, 2], "round": [0, 0],
                        "is_action_valid": [1, 1], "advantage": [1.5, -1.0], "dup": [0, 0]}, rt.DUMPS[-1]
# A batch whose length does not match the dump (never the case in DrMAS's fit): no fields, no crash.
rt.RayPPOTrainer().fit_step({"all": batch}, ["p"], ["a"])
assert rt.DUMPS[-1] == {"n": 1}, rt.DUMPS[-1]
results["dump"] = "ok"

# ── The Corrector is registered and MarsRL's chain replaces the math orchestra ─────────────────
import numpy as np  # noqa: E402
from agent_system.agent.orchestra.math import MathMultiAgentOrchestra  # noqa: E402
from agent_system.agent.registry import AgentRegistry  # noqa: E402

assert C in AgentRegistry.names()
assert MathMultiAgentOrchestra.__name__ == "MathMultiAgentOrchestra" and MathMultiAgentOrchestra.run is not sys.modules["agent_system.agent.orchestra.math.math_orchestra"].MathMultiAgentOrchestra.run

calls = []


class FakeAgent:
    def __init__(self, name, answers):
        self.name, self.answers = name, answers

    def call(self, gen_batch, env_obs, team_context, actor_rollout_wg, agent_active_mask, step):
        calls.append((self.name, [int(m) for m in agent_active_mask]))
        texts = [self.answers(i, len([c for c in calls if c[0] == self.name])) for i in range(len(agent_active_mask))]
        return Batch(len(texts), {}, {}), texts

    def update_approved_vector(self, texts, approved, mask):
        return np.logical_or(approved, np.array([("approve" in t) if m else True for t, m in zip(texts, mask)]))


orchestra = MathMultiAgentOrchestra.__new__(MathMultiAgentOrchestra)
orchestra.multiagent_batch_buffer = []
orchestra.max_loop_num = 3  # rounds 2
orchestra.agents_to_wg_mapping = {S: "w1", V: "w2", C: "w3"}
# Item 0 is approved at the first check; item 1 rejected twice; item 2 rejected, then approved.
verdicts = {0: ["approve"], 1: ["reject", "reject"], 2: ["reject", "approve"]}
orchestra.agents = {
    S: FakeAgent(S, lambda i, k: f"solution {i} boxed"),
    V: FakeAgent(V, lambda i, k: f"<verify>{verdicts[i][min(k, len(verdicts[i])) - 1]}</verify>"),
    C: FakeAgent(C, lambda i, k: f"fixed {i} boxed #{k}"),
}
actions, buffer = orchestra.run(gen_batch=[0, 1, 2], env_obs={"text": ["a", "b", "c"]}, actor_rollout_wgs={"w1": None, "w2": None, "w3": None}, active_masks=np.array([True, True, True]), step=1)
assert calls == [(S, [1, 1, 1]), (V, [1, 1, 1]), (C, [0, 1, 1]), (V, [0, 1, 1]), (C, [0, 1, 0])], calls
assert actions == ["solution 0 boxed", "fixed 1 boxed #2", "fixed 2 boxed #1"], actions
assert [b["agent_id"] for b in buffer] == [S, V, C, V, C]
# Each saved batch is stamped with its chain position and its agent's round.
assert [b["batch"].non_tensor_batch["marsrl_turn"][0] for b in buffer] == [0, 1, 2, 3, 4]
assert [b["batch"].non_tensor_batch["marsrl_round"][0] for b in buffer] == [0, 0, 0, 1, 1]
results["orchestra"] = "ok"

# ── The veRL reward function ─────────────────────────────────────────────────────────────────
os.environ["MARSRL_FORMAT_PENALTY"] = "0.25"
os.environ["MARSRL_REWARD_SCALE"] = "2"
cases = [
    ("So the answer is \\boxed{\\frac{1}{2}}.", "0.5", {"score": 2.0, "acc": 1.0, "pred": "\\frac{1}{2}", "format_valid": 1.0}),
    ("… \\boxed{1,000}", "1000", {"score": 2.0, "acc": 1.0, "pred": "1,000", "format_valid": 1.0}),
    ("The result is 42.\n#### 42", "42", {"score": 1.75, "acc": 1.0, "pred": "42", "format_valid": 0.0}),
    ("\\boxed{41}", "42", {"score": 0.0, "acc": 0.0, "pred": "41", "format_valid": 1.0}),
    ("no answer at all", "42", {"score": -0.25, "acc": 0.0, "pred": "", "format_valid": 0.0}),
    ("first \\boxed{3} then \\boxed{\\text{4}}", "4", {"score": 2.0, "acc": 1.0, "pred": "\\text{4}", "format_valid": 1.0}),
    ("\\boxed{50\\%}", "0.5", {"score": 2.0, "acc": 1.0, "pred": "50\\%", "format_valid": 1.0}),
]
for solution, truth, expected in cases:
    got = reward.compute_score("marsrl/math", solution, truth, extra_info={"index": 0})
    assert got == expected, (solution, got, expected)
assert reward.last_boxed("\\boxed{a{b}c} and \\boxed{d") == "a{b}c"
results["reward"] = "ok"

print(json.dumps(results))
