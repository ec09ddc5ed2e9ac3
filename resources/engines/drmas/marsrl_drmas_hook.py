"""MarsRL Studio's hook for DrMAS (issue 38): the Studio's own code, loaded into a DrMAS job.

Ray runs ``install()`` in every worker process of the job before it executes tasks, because the
Studio submits the job with ``runtime_env = {"worker_process_setup_hook": "marsrl_drmas_hook.install",
"env_vars": {"PYTHONPATH": "<this folder>:…"}}`` (a string is the only form the Jobs API accepts,
ray/dashboard/modules/job/sdk.py). ``install()`` imports nothing of DrMAS: it adds an import hook
that patches three DrMAS modules when (and in whichever process) they are first imported, so the
FSDP and vLLM workers, which never import them, are untouched.

What it changes (langfengQ/DrMAS@19c632bc):

1. ``verl.trainer.ppo.ray_trainer`` — the rollout dump. ``fit()`` splits the batch by worker group,
   decodes each part, re-combines it with ``combine_batches`` and calls ``_dump_generations(inputs,
   outputs, scores, reward_extra_infos_dict, dump_path)``, which writes ``input``, ``output``,
   ``score``, ``step`` and every extra list of the right length. The batch is not passed, so the
   agent id, the group and trajectory ids and the advantage are lost, and the rows DrMAS copies to
   pad each worker group's batch (``adjust_batch(mode="copy")``) look like real turns. The hook keeps
   the last combined batch (the one whose order the dump uses) and adds, per line: ``agent_id``,
   ``wg_id``, ``uid`` (the problem's group), ``traj_uid``, ``env_step``, ``turn`` (position in the
   chain), ``round`` (how many turns of this agent came before in the chain), ``is_action_valid``,
   ``advantage`` (GRPO's advantage is constant over a response's tokens: its first response token's
   value) and ``dup`` (0 for the first occurrence of a turn, 1 for a padding copy).

2. ``agent_system.agent.orchestra.base`` — every batch an agent saves is stamped with its chain
   position and round (``marsrl_turn``, ``marsrl_round``), so the Studio can tell Verifier 1 from
   Verifier 2. Every saved batch gets the keys, so DrMAS's collation of per-row dicts stays aligned.

3. ``agent_system.agent.orchestra.math`` — only when ``MARSRL_DRMAS_ORCHESTRA=marsrl``: DrMAS has no
   Corrector and picks its orchestra with an if/elif (``rollout_loop.py:396-401``) that imports
   ``MathMultiAgentOrchestra`` from this package. The hook registers a "Corrector Agent" and puts
   MarsRL's chain in that name: the Solver once, then per round the Verifier on the items not yet
   approved and the Corrector on those it rejected (MarsRL, arXiv 2511.11373: Solver → V1 → C1 →
   V2 → C2 …, stopping at an approval). ``agent.orchestra.math.max_loop_num`` is rounds + 1.

A failure inside the hook never stops training: the dump is written without the extra fields (the
Studio then marks the turns "agent unknown") and one warning is printed.
"""

import importlib.abc
import importlib.machinery
import os
import sys

CORRECTOR_AGENT = "Corrector Agent"
SOLVER_AGENT = "Solver Agent"
VERIFIER_AGENT = "Verifier Agent"

CORRECTOR_PROMPT = """
# Task Introduction
{env_prompt}

# Your Teammates' Outputs
{team_context}

# Your Role
You are a "Corrector Agent". The "Verifier Agent" rejected the most recent solution. Read its report, fix every error you agree is one, keep the steps that were right, and write the complete corrected solution. The report can be mistaken: where you are sure a step is right, keep it and say why.

You should give the final answer within \\boxed{{}}.
"""

_WARNED = set()


def _warn_once(what, error):
    if what in _WARNED:
        return
    _WARNED.add(what)
    print(f"[marsrl hook] {what} failed, continuing without it: {error!r}", flush=True)


# ── Pure functions (no DrMAS, no numpy; tested with plain python3) ─────────────────────────────


def as_list(value):
    """A tensor, array or list row as a Python list."""
    if hasattr(value, "tolist"):
        value = value.tolist()
    return list(value)


def plain(value):
    """A JSON-ready Python value from a numpy/torch scalar."""
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        try:
            return value.item()
        except (ValueError, TypeError):
            pass
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value


def first_response_value(values, mask):
    """The value at the first response token the mask keeps; None when it keeps none."""
    for v, m in zip(as_list(values), as_list(mask)):
        if m:
            return float(v)
    return None


def dup_flags(keys):
    """1 for every key already seen earlier in the list, else 0."""
    seen = set()
    flags = []
    for key in keys:
        flags.append(1 if key in seen else 0)
        seen.add(key)
    return flags


DUMP_FIELDS = (
    ("agent_id", "agent_id", str),
    ("wg_id", "wg_id", str),
    ("uid", "uid", str),
    ("traj_uid", "traj_uid", str),
    ("env_step", "env_step", int),
    ("marsrl_turn", "turn", int),
    ("marsrl_round", "round", int),
    ("is_action_valid", "is_action_valid", int),
)


def dump_extras(non_tensor, n, inputs, outputs, advantages=None, response_mask=None):
    """The per-line fields the hook adds to one step's dump.

    ``non_tensor`` maps a field to a sequence of ``n`` values (DataProto.non_tensor_batch);
    ``advantages`` and ``response_mask`` are per-row sequences over response tokens, or None.
    Only fields present for every row are written (``_dump_generations`` writes a list only when
    its length is the number of lines).
    """
    extras = {}
    for source, name, cast in DUMP_FIELDS:
        column = non_tensor.get(source)
        if column is None or len(column) != n:
            continue
        extras[name] = [cast(plain(v)) if plain(v) is not None else None for v in column]
    if advantages is not None and response_mask is not None and len(advantages) == n:
        extras["advantage"] = [first_response_value(advantages[i], response_mask[i]) for i in range(n)]
    keys = [
        (
            extras.get("traj_uid", [None] * n)[i],
            extras.get("agent_id", [None] * n)[i],
            extras.get("turn", [None] * n)[i],
            inputs[i],
            outputs[i],
        )
        for i in range(n)
    ]
    extras["dup"] = dup_flags(keys)
    return extras


def chain_schedule(rounds, agents):
    """The agents MarsRL's chain calls, in order: the Solver, then (Verifier, Corrector) per round."""
    out = []
    if SOLVER_AGENT in agents:
        out.append(SOLVER_AGENT)
    for _ in range(rounds):
        if VERIFIER_AGENT not in agents:
            break
        out.append(VERIFIER_AGENT)
        if CORRECTOR_AGENT not in agents:
            break
        out.append(CORRECTOR_AGENT)
    return out


# ── Patches ──────────────────────────────────────────────────────────────────────────────────────


def _patch_ray_trainer(module):
    combine = getattr(module, "combine_batches", None)
    trainer = getattr(module, "RayPPOTrainer", None)
    if combine is None or trainer is None or getattr(trainer, "_marsrl_patched", False):
        return
    state = {"last": None}

    def combine_batches(split_batches):
        combined = combine(split_batches)
        state["last"] = combined
        return combined

    original_dump = trainer._dump_generations

    def _dump_generations(self, inputs, outputs, scores, reward_extra_infos_dict, dump_path):
        extras = {}
        try:
            batch = state["last"]
            n = len(inputs)
            if batch is not None and len(batch) == n:
                tensors = batch.batch
                has_adv = "advantages" in tensors.keys() and "response_mask" in tensors.keys()
                extras = dump_extras(
                    batch.non_tensor_batch,
                    n,
                    inputs,
                    outputs,
                    tensors["advantages"] if has_adv else None,
                    tensors["response_mask"] if has_adv else None,
                )
        except Exception as error:  # noqa: BLE001 - the Studio's fields must never stop training
            _warn_once("adding agent ids to the dump", error)
            extras = {}
        merged = dict(reward_extra_infos_dict or {})
        for key, values in extras.items():
            merged.setdefault(key, values)
        return original_dump(self, inputs, outputs, scores, merged, dump_path)

    module.combine_batches = combine_batches
    trainer._dump_generations = _dump_generations
    trainer._marsrl_patched = True


def _patch_orchestra_base(module):
    base = getattr(module, "BaseOrchestra", None)
    if base is None or getattr(base, "_marsrl_patched", False):
        return
    original_save = base.save_to_buffer
    original_reset = base.reset_buffer

    def reset_buffer(self):
        self._marsrl_counts = {}
        return original_reset(self)

    def save_to_buffer(self, name, batch):
        try:
            import numpy as np

            counts = getattr(self, "_marsrl_counts", None)
            if counts is None:
                counts = self._marsrl_counts = {}
            turn = len(self.multiagent_batch_buffer)
            round_ = counts.get(name, 0)
            counts[name] = round_ + 1
            n = len(batch)
            batch.non_tensor_batch["marsrl_turn"] = np.array([turn] * n, dtype=object)
            batch.non_tensor_batch["marsrl_round"] = np.array([round_] * n, dtype=object)
        except Exception as error:  # noqa: BLE001
            _warn_once("stamping the chain position", error)
        return original_save(self, name, batch)

    base.reset_buffer = reset_buffer
    base.save_to_buffer = save_to_buffer
    base._marsrl_patched = True


def _register_corrector():
    from agent_system.agent.agents.base import BaseAgent
    from agent_system.agent.registry import AgentRegistry
    from agent_system.agent.utils import math_projection
    from agent_system.multi_turn_rollout.utils import preprocess_batch
    import numpy as np

    if CORRECTOR_AGENT in AgentRegistry.names():
        return

    @AgentRegistry.register(CORRECTOR_AGENT)
    class CorrectorAgent(BaseAgent):
        def __init__(self, wg_id, tokenizer, processor, config):
            super().__init__(CORRECTOR_AGENT, CORRECTOR_PROMPT, wg_id=wg_id, tokenizer=tokenizer, processor=processor, config=config)

        def call(self, gen_batch, env_obs, team_context, actor_rollout_wg, agent_active_mask, step):
            obs = self.build_prompt(env_obs, team_context, step)
            batch = preprocess_batch(gen_batch=gen_batch, obs=obs, config=self.config, tokenizer=self.tokenizer, processor=self.processor)
            batch, texts = self._generate_with_llm(batch, actor_rollout_wg, agent_active_mask, gen_batch.meta_info)
            texts, valids = math_projection(texts, check_think_tag=False)
            batch.non_tensor_batch["is_action_valid"] = valids
            batch.non_tensor_batch["env_step"] = np.array([step] * len(texts), dtype=object)
            return batch, texts


def _marsrl_orchestra(math_class, helpers):
    import numpy as np

    update_team_context = helpers.update_team_context
    update_text_action = helpers.update_text_action

    class MarsRLOrchestra(math_class):
        """MarsRL's chain in DrMAS: Solver, then Verifier → Corrector per round, until approved."""

        def _act(self, agent_id, gen_batch, env_obs, team_context, actor_rollout_wgs, mask, step):
            wg = actor_rollout_wgs[self.agents_to_wg_mapping[agent_id]]
            batch, texts = self.agents[agent_id].call(
                gen_batch=gen_batch, env_obs=env_obs, team_context=team_context, actor_rollout_wg=wg, agent_active_mask=mask, step=step
            )
            team_context = update_team_context(agent_id, team_context, texts, mask)
            self.save_to_buffer(agent_id, batch)
            return batch, texts, team_context

        def run(self, gen_batch, env_obs, actor_rollout_wgs, active_masks, step):
            self.reset_buffer()
            text_actions, team_context, env_obs = self.initialize_context(env_obs)
            active = np.asarray(active_masks).astype(bool)
            approved = np.zeros(len(gen_batch), dtype=bool)
            if SOLVER_AGENT in self.agents and active.any():
                _, texts, team_context = self._act(SOLVER_AGENT, gen_batch, env_obs, team_context, actor_rollout_wgs, active, step)
                text_actions = update_text_action(text_actions, texts, active)
            for _ in range(self.max_loop_num - 1):
                mask = np.logical_and(active, np.logical_not(approved))
                if not mask.any() or VERIFIER_AGENT not in self.agents:
                    break
                _, texts, team_context = self._act(VERIFIER_AGENT, gen_batch, env_obs, team_context, actor_rollout_wgs, mask, step)
                approved = self.agents[VERIFIER_AGENT].update_approved_vector(texts, approved, mask)
                mask = np.logical_and(active, np.logical_not(approved))
                if not mask.any() or CORRECTOR_AGENT not in self.agents:
                    break
                _, texts, team_context = self._act(CORRECTOR_AGENT, gen_batch, env_obs, team_context, actor_rollout_wgs, mask, step)
                text_actions = update_text_action(text_actions, texts, mask)
            return text_actions, self.multiagent_batch_buffer

    MarsRLOrchestra.__name__ = "MathMultiAgentOrchestra"
    MarsRLOrchestra.__qualname__ = "MathMultiAgentOrchestra"
    return MarsRLOrchestra


def _patch_math_orchestra(module):
    if os.environ.get("MARSRL_DRMAS_ORCHESTRA") != "marsrl" or getattr(module, "_marsrl_patched", False):
        return
    # Registration and the class swap must both happen, or neither: a Corrector in agent_ids with
    # DrMAS's own loop would never be called; DrMAS's loop without a registered Corrector fails
    # loudly at AgentRegistry.create, which is the right failure.
    _register_corrector()
    helpers = sys.modules["agent_system.agent.orchestra.math.math_orchestra"]
    module.MathMultiAgentOrchestra = _marsrl_orchestra(module.MathMultiAgentOrchestra, helpers)
    module._marsrl_patched = True
    print("[marsrl hook] MarsRL orchestra (Solver → Verifier → Corrector) installed as the math orchestra", flush=True)


PATCHES = {
    "verl.trainer.ppo.ray_trainer": _patch_ray_trainer,
    "agent_system.agent.orchestra.base": _patch_orchestra_base,
    "agent_system.agent.orchestra.math": _patch_math_orchestra,
}


class _PatchingLoader(importlib.abc.Loader):
    def __init__(self, loader, patch):
        self._loader = loader
        self._patch = patch

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        try:
            self._patch(module)
        except Exception as error:  # noqa: BLE001
            _warn_once(f"patching {module.__name__}", error)


class _PatchingFinder(importlib.abc.MetaPathFinder):
    """Finds the patched modules with the normal path finder and wraps their loaders."""

    def find_spec(self, fullname, path, target=None):
        patch = PATCHES.get(fullname)
        if patch is None:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return None
        spec.loader = _PatchingLoader(spec.loader, patch)
        return spec


def install():
    """Ray's worker_process_setup_hook: cheap, imports nothing of DrMAS."""
    if any(isinstance(f, _PatchingFinder) for f in sys.meta_path):
        return
    sys.meta_path.insert(0, _PatchingFinder())
    for name, patch in PATCHES.items():
        module = sys.modules.get(name)
        if module is not None:
            try:
                patch(module)
            except Exception as error:  # noqa: BLE001
                _warn_once(f"patching {name}", error)
