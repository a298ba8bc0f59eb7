"""The environment rank processes get: an allow-list, never credentials.

Rank processes run untrusted candidate code, so they see only what a CUDA/NCCL program
needs. Anything not on the allow-list is dropped, and names that look like credentials are
dropped even when a prefix would allow them (e.g. a `TORCH_HUB_TOKEN`).
"""

from __future__ import annotations

import fnmatch
import os
from typing import Mapping

# Exact names a rank may inherit.
_ALLOW_EXACT = {
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TZ",
    "TMPDIR", "PYTHONPATH", "PYTHONHASHSEED", "VIRTUAL_ENV", "CONDA_PREFIX",
    "LD_LIBRARY_PATH", "LIBRARY_PATH", "CPATH", "CUDA_HOME", "CUDA_PATH",
    "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "CUDA_LAUNCH_BLOCKING", "CUDA_MODULE_LOADING",
    "NVIDIA_VISIBLE_DEVICES", "MASTER_ADDR", "MASTER_PORT", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
    "CC", "CXX", "MAX_JOBS", "TRITON_CACHE_DIR", "GLOO_SOCKET_IFNAME",
}
# Prefixes of names a rank may inherit (torch, NCCL, NVSHMEM, Triton tuning knobs).
_ALLOW_PREFIX = ("TORCH_", "NCCL_", "NVSHMEM_", "TRITON_", "PYTORCH_", "CUBLAS_", "CUDNN_")
# Never passed on, whatever the allow-list says: credentials and tracking endpoints.
_DENY_PATTERNS = (
    "*_API_KEY", "*API_KEY*", "*_TOKEN", "*TOKEN*", "*SECRET*", "*PASSWORD*", "*CREDENTIAL*",
    "AWS_*", "AZURE_*", "GOOGLE_*", "GCP_*", "MLFLOW_*", "HF_*", "HUGGING*", "OPENAI_*",
    "ANTHROPIC_*", "GEMINI_*", "XAI_*", "LITELLM_*", "RAY_*", "SSH_*", "GH_*", "GITHUB_*",
)

# NVLink multicast is off on the H200 nodes on purpose (docs/design.md); every rank keeps it off.
FORCED = {
    "NCCL_NVLS_ENABLE": "0",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
    "NVSHMEM_DISABLE_NVLS": "1",
    # A GPU group's CUDA_VISIBLE_DEVICES names nvidia-smi's indices (engine/node/gpu_groups.py
    # chose the group from `nvidia-smi topo -m`); CUDA numbers fastest first unless told
    # otherwise, which differs on nodes of mixed GPUs.
    "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
}


def is_secret(name: str) -> bool:
    """True for names that must never reach candidate code."""
    upper = name.upper()
    return any(fnmatch.fnmatchcase(upper, p) for p in _DENY_PATTERNS)


def is_allowed(name: str) -> bool:
    if is_secret(name):
        return False
    return name in _ALLOW_EXACT or name.startswith(_ALLOW_PREFIX)


def rank_env(base: Mapping[str, str] | None = None, **overrides: str) -> dict[str, str]:
    """The allow-listed subset of `base` (default os.environ), the forced multicast-off
    variables, then `overrides` (which must themselves be allowed names)."""
    base = os.environ if base is None else base
    env = {k: v for k, v in base.items() if is_allowed(k)}
    env.update(FORCED)
    for k, v in overrides.items():
        if is_secret(k):
            raise ValueError(f"refusing to pass secret-looking variable {k!r} to a rank")
        env[k] = str(v)
    return env


def scrub_secrets(environ: "os._Environ[str] | dict[str, str] | None" = None) -> list[str]:
    """Remove credential-looking variables from `environ` (default os.environ) in place.
    Returns the names removed (never the values)."""
    environ = os.environ if environ is None else environ
    removed = [k for k in list(environ) if is_secret(k)]
    for k in removed:
        del environ[k]
    return removed
