"""What is installed for an engine run (issue 38): printed as one line `MARSRL_PROBE {json}`.

The Studio runs it with the configured interpreter (engine.python) directly for a local head, or
as a short Ray job on a cluster, from DrMAS's checkout when one is configured. Versions come from
package metadata where possible (importing vLLM or SGLang takes seconds and may touch the GPU);
veRL's own `verl.__version__` is read by import, since DrMAS reports its bundled 0.3.1.dev there.
"""
import json
import os
import sys

try:
    from importlib import metadata
except ImportError:  # Python < 3.8
    metadata = None


def dist_version(name):
    if metadata is None:
        return None
    try:
        return metadata.version(name)
    except Exception:  # noqa: BLE001
        return None


out = {"python": sys.executable, "python_version": sys.version.split()[0]}
try:
    import verl

    if getattr(verl, "__file__", None) is None:  # a folder named verl on the path, not the package
        raise ImportError("verl is a namespace folder, not the installed package")
    out["verl"] = str(getattr(verl, "__version__", "unknown"))
    root = os.path.dirname(os.path.dirname(os.path.abspath(verl.__file__)))
    out["drmas_root"] = root if os.path.isdir(os.path.join(root, "agent_system")) else None
except Exception as error:  # noqa: BLE001
    out["verl"] = None
    out["drmas_root"] = None
    out["verl_error"] = repr(error)[:500]
out["drmas"] = out["drmas_root"] is not None
for name in ("ray", "torch", "vllm", "sglang", "tensorboard"):
    out[name] = dist_version(name)
print("MARSRL_PROBE " + json.dumps(out), flush=True)
