"""What a set of recorded cells was measured under: the header of every report of them.

Read from the cells themselves (their identity and evaluation), never from the command that
prints the report, so a header cannot claim settings its numbers were not made with. A
value that differs between cells is listed with its counts.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from pkb_ray.records import CellResult

CPU_NOTE = ("CPU run: gloo ranks on CPU tensors at the `small` size check the pipeline and "
            "correctness; their times and speedups are not measurements of GPU speed.")


def _field(r: CellResult, identity_key: str, fallback: object) -> str:
    value = r.identity.get(identity_key)
    if value is None:
        value = fallback
    return str(value) if value not in (None, "", 0) else ""


@dataclass
class SweepFacts:
    devices: Counter = field(default_factory=Counter)
    world_sizes: Counter = field(default_factory=Counter)
    sizes: Counter = field(default_factory=Counter)
    trials: Counter = field(default_factory=Counter)
    hardware: Counter = field(default_factory=Counter)
    harness: Counter = field(default_factory=Counter)
    co_tenancy: Counter = field(default_factory=Counter)
    """Evaluations by how they shared their node: "alone", "exclusive", "beside N"."""
    cells: int = 0

    @property
    def on_cpu(self) -> bool:
        return "cpu" in self.devices

    @staticmethod
    def _one(name: str, values: Counter) -> str:
        if not values:
            return f"{name} ?"
        if len(values) == 1:
            return f"{name} {next(iter(values))}"
        return f"{name} " + " / ".join(f"{v} ({n} cells)" for v, n in values.most_common())

    def header(self) -> list[str]:
        """Lines for the top of a report."""
        lines = [", ".join([
            self._one("device", self.devices),
            self._one("world size", self.world_sizes),
            self._one("size", self.sizes),
            self._one("trials", self.trials),
            self._one("harness", self.harness),
        ]) + f"; {self.cells} cells",
            self._one("hardware", self.hardware)]
        if any(k.startswith("beside") for k in self.co_tenancy):
            lines.append("node shared (GPU groups): " + ", ".join(
                f"{k} ({n} cells)" for k, n in sorted(self.co_tenancy.items())) +
                "; `pkb report --max-co-tenancy 0` keeps those that ran alone")
        if self.on_cpu:
            lines.append(CPU_NOTE)
        return lines

    def short(self) -> str:
        """One line for plot titles."""
        one = lambda c: "/".join(str(v) for v in c) or "?"  # noqa: E731
        return (f"{one(self.devices)}, world size {one(self.world_sizes)}, {one(self.sizes)} size, "
                f"{one(self.hardware)}, harness {one(self.harness)}")


def sweep_facts(records: list[CellResult]) -> SweepFacts:
    facts = SweepFacts(cells=len(records))
    for r in records:
        ev = r.evaluation
        for counter, value in (
            (facts.devices, _field(r, "eval.device", ev.device if ev else "")),
            (facts.world_sizes, _field(r, "eval.world_size", ev.world_size if ev else r.world_size)),
            (facts.sizes, _field(r, "eval.size", ev.size if ev else "")),
            (facts.trials, _field(r, "eval.trials", ev.trials if ev else "")),
            (facts.harness, _field(r, "harness_version", r.harness_version)),
            (facts.hardware, r.hardware_fingerprint or (ev.hardware_fingerprint if ev else "")),
        ):
            if value:
                counter[value] += 1
        if ev is not None and ev.co_tenancy is not None:
            what = ("exclusive" if ev.sharing == "exclusive" else
                    "alone" if ev.co_tenancy == 0 else f"beside {ev.co_tenancy} other evaluation{'s' if ev.co_tenancy > 1 else ''}")
            facts.co_tenancy[what] += 1
    return facts
