"""What a judge keeps across candidates: its rank and device, the judges' group, the gate
it times the reference behind, an L2 scrubber, and the problems it has loaded."""

from __future__ import annotations

import ctypes
import importlib
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from pkb_ray.engine.judge.group import JudgeGroup
from pkb_ray.engine.wire.gate import GatePage, GateUnavailable, LaunchGate

_CU_LIMIT_PERSISTING_L2_CACHE_SIZE = 0x06


def resolve(qualname: str) -> Callable[..., Any]:
    mod, _, fn = qualname.partition(":")
    return getattr(importlib.import_module(mod), fn)


@dataclass
class JudgeContext:
    rank: int
    world_size: int
    device: str
    group: JudgeGroup
    ref_gate: LaunchGate | None = None
    ref_page: GatePage | None = None
    gate_note: str = ""
    ref_gen: int = 0
    """The judges' gate page lives as long as the judges: generations only go up."""
    gate_image: str = ""
    """The gate kernel compiled (base64), handed to every worker: one NVRTC compile per judge."""
    _problems: dict = field(default_factory=dict)
    _scratch: torch.Tensor | None = None
    _libcuda: Any = None

    @property
    def cuda(self) -> bool:
        return self.device.startswith("cuda")

    def build_ref_gate(self, page_fd: int, timeout_us: int) -> None:
        try:
            self.ref_page = GatePage(page_fd, self.world_size)
            if self.cuda:
                from pkb_ray.engine.wire.gate import gate_image

                try:
                    self.gate_image = gate_image()
                except Exception as e:  # noqa: BLE001 - no NVRTC: each gate compiles its own, or none
                    self.gate_note = f"gate kernel not precompiled: {e}"
                self.ref_gate = LaunchGate(self.ref_page, self.rank, torch.cuda.current_device(), timeout_us,
                                           self.gate_image or None)
        except GateUnavailable as e:
            self.gate_note = str(e)
            self.ref_gate = None

    def problem(self, loader: str, source: str, problem_id: str) -> Any:
        """Loaded once per judge (importing a problem's files costs milliseconds to seconds)."""
        key = (loader, source, problem_id)
        if key not in self._problems:
            self._problems[key] = resolve(loader)(source, problem_id)
        return self._problems[key]

    def forget_problems(self) -> None:
        self._problems.clear()

    def scrub_l2(self) -> None:
        """Evict L2 before a timed sample (writing twice its size) and drop any persisting-L2
        window a candidate set, so no call starts with its data already on chip."""
        if not self.cuda:
            return
        if self._scratch is None:
            props = torch.cuda.get_device_properties(torch.cuda.current_device())
            l2 = int(getattr(props, "L2_cache_size", 0) or 0) or (50 << 20)
            self._scratch = torch.empty(2 * l2, dtype=torch.uint8, device=self.device)
            self._libcuda = ctypes.CDLL("libcuda.so.1")
        self._libcuda.cuCtxResetPersistingL2Cache()
        self._libcuda.cuCtxSetLimit(_CU_LIMIT_PERSISTING_L2_CACHE_SIZE, ctypes.c_size_t(0))
        self._scratch.fill_(0x5A)
        torch.cuda.synchronize()
