"""Which GPUs a sandbox holds, and what of the others it cannot reach.

A GPU group's sandbox sees its own GPUs only: under bubblewrap, the device files of its GPUs
(/dev/nvidiaN, N the driver's minor number) and those every CUDA process needs (SHARED_NODES)
are bound, no other /dev/nvidiaN exists inside, and /proc/driver/nvidia/gpus shows its GPUs'
entries only. A process of the sandbox, a child that drops CUDA_VISIBLE_DEVICES included,
can open no other GPU: CUDA and NVML enumerate what they can open, as in a container given
some of a node's GPUs. Where the layout has a v1 devices controller, the sandbox's group
also refuses the other GPUs' minors (bounds.py); on v2 that would take a BPF program, and
the bind mounts already leave nothing to open.

Numbering: a GPU set names the node's GPUs as nvidia-smi does (PCI bus order, which
CUDA_DEVICE_ORDER=PCI_BUS_ID gives CUDA too, engine/env.py). Inside, CUDA numbers the bound
GPUs 0..k-1 in bus order, so the sandbox's CUDA_VISIBLE_DEVICES is rewritten to name, in the
set's order, each GPU's place among them: rank r keeps the GPU its judge holds.

/sys stays the host's, read-only: the other GPUs' PCI entries (config space, vendor, ids)
are readable there but open no device. PKB_SANDBOX_HIDE_GPU_SYSFS=1 masks their directories
too (an empty read-only tmpfs over each), for nodes where the driver is found not to need them.
"""

from __future__ import annotations

import glob
import os
import re
from dataclasses import dataclass

NVIDIA_MAJOR = 195
PROC_GPUS = "/proc/driver/nvidia/gpus"
SHARED_NODES = ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset",
                "/dev/nvidia-caps", "/dev/nvidia-caps-imex-channels")
"""What the driver needs beside a GPU's own file: the control device, unified memory (peer
access and symmetric memory map through it), modeset, and the capability nodes (MIG,
IMEX channels) where the node has them."""


@dataclass(frozen=True)
class NodeGpu:
    index: int
    """nvidia-smi's index: the GPU's place in PCI bus order."""
    minor: int
    """The driver's minor number: the N of /dev/nvidiaN."""
    bus_id: str
    """domain:bus:device.function, lower case ("0000:18:00.0"); "" where not known."""


def _bus_key(bus: str) -> tuple[int, ...]:
    return tuple(int(x, 16) for x in re.split(r"[:.]", bus))


def node_gpus(proc_gpus: str = PROC_GPUS, dev: str = "/dev") -> list[NodeGpu]:
    """This node's GPUs in PCI bus order, from the driver's /proc entries; without them, one
    per /dev/nvidiaN (index = minor, no bus id)."""
    found = []
    for info in glob.glob(f"{proc_gpus}/*/information"):
        try:
            text = open(info).read()
        except OSError:
            continue
        minor = re.search(r"Device Minor:\s*(\d+)", text)
        if minor:
            found.append((os.path.basename(os.path.dirname(info)).lower(), int(minor.group(1))))
    if found:
        found.sort(key=lambda f: _bus_key(f[0]))
        return [NodeGpu(i, minor, bus) for i, (bus, minor) in enumerate(found)]
    minors = sorted(int(m.group(1)) for p in glob.glob(f"{dev}/nvidia*") if (m := re.fullmatch(r".*/nvidia(\d+)", p)))
    return [NodeGpu(m, m, "") for m in minors]


def visible_gpus(text: str | None = None) -> tuple[int, ...] | None:
    """A GPU set as the node's indices: CUDA_VISIBLE_DEVICES (this process's where `text` is
    None), parsed here and nowhere else. None where it is unset: every GPU the process sees.
    GPU UUIDs (or unique prefixes of them, as CUDA takes them) become indices by nvidia-smi's
    table. ValueError for names that are no whole GPU (MIG instances): a GPU group holds
    whole GPUs."""
    if text is None:
        text = os.environ.get("CUDA_VISIBLE_DEVICES")
        if text is None:
            return None
    names = [d.strip() for d in text.split(",") if d.strip()]
    if all(n.isdigit() for n in names):
        return tuple(int(n) for n in names)
    table = _uuid_indices()
    found = [next((i for u, i in table.items() if u.startswith(n)), None) for n in names]
    if None in found:
        raise ValueError(f"CUDA_VISIBLE_DEVICES={text!r} names GPUs that are neither indices nor whole "
                         "GPUs' UUIDs (MIG instances?): a GPU group holds whole GPUs")
    return tuple(i for i in found if i is not None)


def _uuid_indices() -> dict[str, int]:
    """nvidia-smi's index of each GPU by its UUID; empty where nvidia-smi cannot say."""
    import subprocess

    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=index,uuid", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    table = {}
    for row in out.splitlines():
        index, _, uuid = row.partition(", ")
        if index.strip().isdigit():
            table[uuid.strip()] = int(index)
    return table


def first_gpus(gpus: tuple[int, ...] | None, world_size: int) -> tuple[int, ...]:
    """The GPUs a group of `world_size` ranks holds: the first of `gpus`, or of the node's
    (in nvidia-smi's order) where none are named."""
    return (gpus if gpus is not None else tuple(g.index for g in node_gpus()))[:world_size]


@dataclass(frozen=True)
class GpuView:
    """What one sandbox is shown of the node's GPUs."""
    device_nodes: tuple[str, ...]
    """/dev entries to bind."""
    proc_entries: tuple[str, ...] | None
    """The /proc/driver/nvidia/gpus entries (bus ids) to show; None: the whole directory."""
    inside_cvd: str | None
    """CUDA_VISIBLE_DEVICES inside the sandbox; None: as given."""
    deny_rules: tuple[str, ...]
    """devices.deny rules for the other GPUs (cgroup v1)."""
    sysfs_masks: tuple[str, ...]
    """Directories of the other GPUs in /sys to mask (PKB_SANDBOX_HIDE_GPU_SYSFS)."""
    description: str


def view(gpus: tuple[int, ...] | None, proc_gpus: str = PROC_GPUS, dev: str = "/dev") -> GpuView:
    """The view for a sandbox holding `gpus` (node indices); None: every GPU of the node.
    `proc_gpus` and `dev` name where the driver's entries are (a test's own tree)."""
    shared = tuple(p for p in SHARED_NODES if os.path.exists(p))
    node = node_gpus(proc_gpus, dev)
    by_index = {g.index: g for g in node}
    if gpus is None or any(i not in by_index for i in gpus):
        every = tuple(sorted(p for p in glob.glob(f"{dev}/nvidia*") if os.path.exists(p)))
        why = "not named by index" if gpus is None else f"{list(gpus)} not all on this node"
        return GpuView(every, None, None, (), (), f"gpus: every GPU of the node bound (the set is {why})")
    mine = [by_index[i] for i in gpus]
    others = [g for g in node if g.index not in gpus]
    order = sorted(mine, key=lambda g: _bus_key(g.bus_id) if g.bus_id else (g.minor,))
    inside = ",".join(str(order.index(g)) for g in mine)
    nodes = tuple(f"/dev/nvidia{g.minor}" for g in mine if os.path.exists(f"{dev}/nvidia{g.minor}")) + shared
    entries = tuple(g.bus_id for g in mine if g.bus_id) if os.path.isdir(proc_gpus) else None
    masks: tuple[str, ...] = ()
    if os.environ.get("PKB_SANDBOX_HIDE_GPU_SYSFS", "") == "1":
        masks = tuple(os.path.realpath(f"/sys/bus/pci/devices/{g.bus_id}") for g in others
                      if g.bus_id and os.path.isdir(f"/sys/bus/pci/devices/{g.bus_id}"))
    rules = tuple(f"c {NVIDIA_MAJOR}:{g.minor} rwm" for g in others)
    text = (f"gpus: only {','.join(map(str, gpus))} bound (/dev/nvidia{','.join(str(g.minor) for g in mine)}"
            f", CUDA_VISIBLE_DEVICES={inside} inside)")
    return GpuView(nodes, entries, inside, rules, masks, text)

