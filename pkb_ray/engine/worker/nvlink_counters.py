"""The NVLink bytes a GPU sent and received, from NVML's throughput counters (the agent's
`profile` reports them per rank). torch.profiler sees kernels and copies, not the
bytes a kernel moves to a peer through symmetric memory, which is what these problems are about.

NVML is read through ctypes (libnvidia-ml.so.1 comes with the driver; the GPU image has no
pynvml, and a sandbox sees only its group's GPUs through it). The counters are the device's,
in KiB since the driver loaded: a difference around the profiled calls is every process's
traffic on that GPU in that time, which in a sandboxed group is the candidate's ranks'.
Advisory, like the rest of the profile: code in the same process can forge it, and only fools
its own profile."""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

FIELD_TX, FIELD_RX = 138, 139
"""NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX / _RX (nvml.h): data payload, KiB, all links."""


class _Value(ctypes.Union):
    _fields_ = [("d", ctypes.c_double), ("ui", ctypes.c_uint), ("ul", ctypes.c_ulong),
                ("ull", ctypes.c_ulonglong), ("sll", ctypes.c_longlong), ("us", ctypes.c_ushort)]


class _FieldValue(ctypes.Structure):
    """nvmlFieldValue_t."""
    _fields_ = [("fieldId", ctypes.c_uint), ("scopeId", ctypes.c_uint), ("timestamp", ctypes.c_longlong),
                ("latencyUsec", ctypes.c_longlong), ("valueType", ctypes.c_int), ("nvmlReturn", ctypes.c_int),
                ("value", _Value)]


@dataclass(frozen=True)
class LinkBytes:
    tx: int
    rx: int


class NvlinkCounters:
    """One GPU's counters, found by its PCI address (NVML's indices need not match CUDA's)."""

    def __init__(self, pci_bus_id: str) -> None:
        self._nvml = ctypes.CDLL("libnvidia-ml.so.1")
        rc = self._nvml.nvmlInit_v2()
        if rc != 0:
            raise OSError(f"nvmlInit_v2 returned {rc}")
        self._handle = ctypes.c_void_p()
        rc = self._nvml.nvmlDeviceGetHandleByPciBusId_v2(pci_bus_id.encode(), ctypes.byref(self._handle))
        if rc != 0:
            self._nvml.nvmlShutdown()
            raise OSError(f"nvmlDeviceGetHandleByPciBusId_v2({pci_bus_id}) returned {rc}")

    def read(self) -> LinkBytes:
        values = (_FieldValue * 2)()
        values[0].fieldId, values[1].fieldId = FIELD_TX, FIELD_RX
        rc = self._nvml.nvmlDeviceGetFieldValues(self._handle, 2, values)
        if rc != 0 or values[0].nvmlReturn != 0 or values[1].nvmlReturn != 0:
            raise OSError(f"nvmlDeviceGetFieldValues returned {rc} ({values[0].nvmlReturn}, {values[1].nvmlReturn})")
        return LinkBytes(int(values[0].value.ull) * 1024, int(values[1].value.ull) * 1024)

    def close(self) -> None:
        self._nvml.nvmlShutdown()


def pci_bus_id(device_index: int) -> str:
    """NVML's form of a CUDA device's PCI address, from torch's device properties."""
    import torch

    p = torch.cuda.get_device_properties(device_index)
    return f"{p.pci_domain_id:08x}:{p.pci_bus_id:02x}:{p.pci_device_id:02x}.0"


def open_counters(device_index: int) -> NvlinkCounters | str:
    """The counters of this CUDA device, or why there are none (no NVML, no NVLink counters:
    a PCIe-only node, an old driver)."""
    try:
        counters = NvlinkCounters(pci_bus_id(device_index))
    except Exception as exc:  # noqa: BLE001 - no driver library, no CUDA build, old torch: no counters, say why
        return f"NVLink counters unavailable: {type(exc).__name__}: {exc}"
    try:
        counters.read()
    except OSError as exc:
        counters.close()
        return f"NVLink counters unavailable: {exc}"
    return counters


def link_bytes(counters: NvlinkCounters | str | None) -> LinkBytes | str:
    """A reading, or why there is none."""
    if not isinstance(counters, NvlinkCounters):
        return counters or "NVLink counters unavailable: not a GPU rank"
    try:
        return counters.read()
    except OSError as exc:
        return f"NVLink counters unavailable: {exc}"


def nvlink_delta(counters: NvlinkCounters | str, before: LinkBytes | str, after: LinkBytes | str) -> dict:
    """What a rank's profile reports: the bytes sent and received between two readings, or
    why not. Closes the counters."""
    if isinstance(counters, NvlinkCounters):
        counters.close()
    for reading in (before, after):
        if isinstance(reading, str):
            return {"unavailable": reading[:300]}
    tx, rx = after.tx - before.tx, after.rx - before.rx  # type: ignore[union-attr]
    if tx < 0 or rx < 0:
        return {"unavailable": "NVLink counters went backwards (reset or wrapped) during the calls"}
    return {"tx_bytes": tx, "rx_bytes": rx}
