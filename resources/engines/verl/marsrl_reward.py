"""MarsRL Studio's reward function for veRL runs of the Studio's math task (issue 38).

veRL loads it with ``reward.custom_reward_function.path=<this file>`` (veRL >= 0.7.1; before,
``custom_reward_function.path``) and calls ``compute_score(data_source, solution_str, ground_truth,
extra_info=None, **kwargs)`` in its reward workers (verl/trainer/ppo/reward.py load_extern_object).
A dict answer becomes the turn's score plus extra fields, which veRL writes into every dumped line
and turns into validation metrics (``val-core/marsrl/math/acc/mean@N``).

The rules follow the Studio's own math checker (src-main/engine/tasks/math-answer.ts) as far as
plain Python allows: the final answer is the last ``\\boxed{…}`` (else the text after the last
``####``, else after the last ``Answer:``), and only a boxed answer is well formed, so the format
penalty applies otherwise. Answers are compared with Math-Verify when it is installed (veRL lists
it), else by normalized text and by value. The Studio re-judges the dumped turns with its own
checker when it ingests them; the reward here is what training saw.

Settings come by environment variable (the job's runtime_env, set by the Studio's plan), so no
Hydra key beyond veRL's own is needed:
  MARSRL_FORMAT_PENALTY  subtracted when the answer is not boxed (reward.format_penalty)
  MARSRL_REWARD_SCALE    reward of a right answer (reward.scale.solver)
"""

import math
import os
import re

try:  # Math-Verify: symbolic and numeric equality of LaTeX answers.
    from math_verify import parse as _mv_parse
    from math_verify import verify as _mv_verify
except Exception:  # noqa: BLE001 - optional
    _mv_parse = None
    _mv_verify = None


def last_boxed(text):
    """The content of the last \\boxed{...} or \\fbox{...} (braces balanced), or None."""
    best = None
    for match in re.finditer(r"\\(?:boxed|fbox)\s*\{", text):
        depth = 1
        i = match.end()
        while i < len(text) and depth > 0:
            if text[i] == "{":
                depth += 1
            elif text[i] == "}":
                depth -= 1
            i += 1
        if depth == 0:
            best = text[match.end() : i - 1]
    return best


def extract_answer(text):
    """(answer, boxed): the final answer and whether it was boxed, as the Studio's prompts ask."""
    boxed = last_boxed(text)
    if boxed is not None:
        return boxed.strip(), True
    hashes = text.rsplit("####", 1)
    if len(hashes) == 2 and hashes[1].strip():
        return hashes[1].strip().splitlines()[0].strip(), False
    answer = re.findall(r"answer\s*(?:is)?\s*[:：]\s*(.+)", text, flags=re.IGNORECASE)
    if answer:
        return answer[-1].strip(), False
    return None, False


_TEXT_WRAPPERS = re.compile(r"\\(?:text|textbf|mathrm|mbox)\s*\{([^{}]*)\}")


def normalize(answer):
    """Text that two ways of writing the same plain answer share."""
    s = answer.strip()
    s = _TEXT_WRAPPERS.sub(r"\1", s)
    s = s.replace("\\left", "").replace("\\right", "").replace("\\!", "").replace("\\,", "").replace("\\ ", "")
    s = s.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac").replace("$", "")
    s = re.sub(r"\s+", "", s)
    s = s.rstrip(".")
    if re.fullmatch(r"-?\d{1,3}(,\d{3})+(\.\d+)?", s):
        s = s.replace(",", "")
    return s


def as_number(answer):
    """The value of a plain number, fraction or percentage, or None."""
    s = normalize(answer)
    percent = s.endswith("\\%") or s.endswith("%")
    s = s[:-2] if s.endswith("\\%") else s[:-1] if s.endswith("%") else s
    m = re.fullmatch(r"(-?)\\frac\{(-?\d+(?:\.\d+)?)\}\{(-?\d+(?:\.\d+)?)\}", s)
    try:
        if m:
            value = float(m.group(2)) / float(m.group(3)) * (-1 if m.group(1) else 1)
        elif re.fullmatch(r"-?\d+(?:\.\d+)?/-?\d+(?:\.\d+)?", s):
            a, b = s.split("/")
            value = float(a) / float(b)
        else:
            value = float(s)
    except (ValueError, ZeroDivisionError):
        return None
    if not math.isfinite(value):
        return None
    return value / 100 if percent else value


def answers_equal(reference, candidate):
    """Whether a candidate final answer equals the reference answer."""
    if candidate is None:
        return False
    if normalize(reference) == normalize(candidate):
        return True
    a, b = as_number(reference), as_number(candidate)
    if a is not None and b is not None:
        return abs(a - b) <= 1e-6 * max(1.0, abs(a))
    if _mv_verify is not None:
        try:
            return bool(_mv_verify(_mv_parse(f"${reference}$"), _mv_parse(f"${candidate}$")))
        except Exception:  # noqa: BLE001 - a parse failure is a wrong answer, never a crash
            return False
    return False


def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    """veRL's custom reward function: score, and extras written to the dumps and metrics."""
    answer, boxed = extract_answer(solution_str or "")
    correct = answers_equal(str(ground_truth), answer)
    penalty = 0.0 if boxed else float(os.environ.get("MARSRL_FORMAT_PENALTY", "0") or 0)
    scale = float(os.environ.get("MARSRL_REWARD_SCALE", "1") or 1)
    return {
        "score": scale * float(correct) - penalty,
        "acc": float(correct),
        "pred": answer if answer is not None else "",
        "format_valid": float(boxed),
    }
