"""The oneDNN instruction-set cap of a CPU training run (`train.cpu_isa_cap`), set before MindSpore loads.

MindSpore 2.10 bundles oneDNN 3.10.1, which on an AVX-512/AMX CPU runs plain NCHW convolutions
with `jit_uni_ncsp:conv+ref:any` (about 815 ms for the CNN's first conv at batch 64 here), where
MindSpore 2.5's oneDNN 2.2 chose `gemm:jit` (about 14 ms). Capping oneDNN at AVX2 makes 2.10 pick
`x64:gemm:jit` again (docs/PERFORMANCE.md, "The CNN path"). oneDNN reads ONEDNN_MAX_CPU_ISA once,
when it first dispatches, so the variable must be in the environment before MindSpore is imported.
"""

from __future__ import annotations

import os
from typing import Any, Dict, MutableMapping, Optional

ENV = "ONEDNN_MAX_CPU_ISA"
AUTO_CAP = {"cnn": "AVX2"}  # the measured rule: the MLP is no faster or slower with it (PERFORMANCE.md)


def decide(setting: str, model: str, target: str, environ: Optional[MutableMapping[str, str]] = None) -> Dict[str, Any]:
    """What the run does about the cap: {setting, applied (the value set or None), why}."""
    env = os.environ if environ is None else environ
    if target != "CPU":
        return {"setting": setting, "applied": None, "why": "the target is %s, not CPU" % target}
    if env.get(ENV):
        return {
            "setting": setting,
            "applied": None,
            "why": "%s=%s was already set in the environment; left as it is" % (ENV, env[ENV]),
        }
    if setting == "none":
        return {"setting": setting, "applied": None, "why": "train.cpu_isa_cap is none"}
    if setting == "auto":
        cap = AUTO_CAP.get(model)
        if cap is None:
            return {
                "setting": setting,
                "applied": None,
                "why": "auto: no cap for model %s (it runs no convolution)" % model,
            }
        return {
            "setting": setting,
            "applied": cap,
            "why": "auto: oneDNN 3.x picks a slow reference kernel for NCHW convolutions on AVX-512 "
            "CPUs; capped at %s it picks gemm:jit" % cap,
        }
    return {"setting": setting, "applied": setting, "why": "train.cpu_isa_cap is %s" % setting}


def apply(decision: Dict[str, Any], environ: Optional[MutableMapping[str, str]] = None) -> None:
    """Put the decided cap into the environment (before MindSpore is imported)."""
    env = os.environ if environ is None else environ
    if decision.get("applied"):
        env[ENV] = decision["applied"]
