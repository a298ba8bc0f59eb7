"""A GPU-side launch gate shared by the ranks of one evaluation.

Why: with a device synchronize before every timed call, the GPU sits idle while the host
runs the call's Python and launches its kernels; CUDA events on the stream then count
that host time too. For a 20 us all-reduce the host part is 80-250 us and it varies from
process to process: one unchanged kernel measures 0.10-0.29 ms across five evaluations
without a gate (2 x H200). nvbench solves this for one
GPU with a "blocking kernel" that holds the stream until the host has queued everything;
this is the multi-rank form of it:

  close():  queue the gate kernel on the current stream. It occupies every thread slot of
            every SM (so a kernel a candidate hides on another stream cannot run early
            either) and spins until all ranks have said "queued" for this generation.
  open():   this rank writes its generation into a page of host memory shared by all
            ranks (a /dev/shm file, mapped into each GPU's address space). When the last
            rank writes, every GPU sees it over PCIe within a microsecond or two, so all
            ranks start the call together: no NCCL barrier and no host rank skew inside
            the measured interval.

A call that waits on the GPU from the host (an .item(), a synchronize, a full launch
queue) would deadlock against a closed gate, so the kernel gives up after `timeout_us`
and counts the expiry; timing.py then times that callable without the gate.

Judges time the reference behind a gate whose slots they open themselves. A worker queues
the candidate's calls behind a gate whose slots only the judges open (each judge when its
worker says everything is queued), so the judge reads the time from the gate's opening to
the worker's answer on its own clock. The worker can still write the page (it maps it);
opening early only moves work out of the window that the judge's clock bounds from above,
so it buys nothing (judge/clock.py). The kernel is compiled with NVRTC
(torch.cuda._compile_kernel).
"""

from __future__ import annotations

import base64
import ctypes
import mmap
import os
import time

import torch

from pkb_ray.engine.wire.arena import sealed_memfd

_perf_counter = time.perf_counter

PAGE_BYTES = 4096

_SRC = r"""
__device__ __forceinline__ unsigned long long pkb_now() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// page: host memory shared by the ranks, mapped: [0, world) each rank's queued generation,
// [world, 2 world) each rank's count of expired gates. go: a device int of this rank.
// One poller: eight busy pollers measure slower and noisier.
extern "C" __global__ void pkb_gate(int page_lo, int page_hi, int world, int rank, int gen,
                                    int timeout_us, volatile int* go) {
    if (threadIdx.x == 0) {
        const unsigned long long deadline =
            pkb_now() + 1000ull * (unsigned long long)(unsigned)timeout_us;
        if (blockIdx.x == 0) {
            volatile int* page = (volatile int*)(
                ((unsigned long long)(unsigned)page_hi << 32) | (unsigned long long)(unsigned)page_lo);
            bool released = false;
            while (true) {
                int all = 1;
                for (int r = 0; r < world; ++r) all &= (page[r] >= gen);
                if (all) { released = true; break; }
                if (pkb_now() > deadline) break;
                __nanosleep(64);
            }
            if (!released) {
                page[world + rank] = page[world + rank] + 1;  // one writer: this rank's gate
                __threadfence_system();
            }
            __threadfence();
            *go = gen;
        } else {
            // Block 0 alone polls PCIe; the rest watch a device word. Their own deadline
            // (a little later) guards against block 0 never being scheduled.
            while (*go < gen && pkb_now() < deadline + 1000000ull) __nanosleep(64);
        }
    }
    __syncthreads();
}
"""


class GateUnavailable(RuntimeError):
    """The gate cannot be built here; timing falls back to ungated calls."""


class GatePage:
    """The page of host memory the gate kernels poll: [0, world) each rank's opened
    generation, [world, 2 world) each rank's count of expired gates.

    Made by the node (a memfd) and handed as a file descriptor to every process that opens
    or polls it. For the candidate's gate the judges write the open slots (a worker cannot
    open the judges' clock); for the reference's gate each judge writes its own."""

    def __init__(self, fd: int, world_size: int) -> None:
        if 2 * world_size * 4 > PAGE_BYTES:
            raise GateUnavailable(f"world size {world_size} does not fit one page")
        if os.fstat(fd).st_size != PAGE_BYTES:
            raise GateUnavailable(f"a gate page has {PAGE_BYTES} bytes")
        self.world_size = world_size
        self._map = mmap.mmap(fd, PAGE_BYTES, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        self._slots = (ctypes.c_int32 * (2 * world_size)).from_buffer(self._map)
        self.host_ptr = ctypes.addressof(self._slots)
        self._registered = False

    @staticmethod
    def create_fd() -> int:
        """A zeroed page (a fresh memfd: a page left over by a killed evaluation would open
        every gate)."""
        return sealed_memfd("pkb_gate", PAGE_BYTES)  # sealed: a shrunk page would SIGBUS the judges

    def open(self, rank: int, gen: int) -> float:
        """Open `rank`'s slot for generation `gen`; returns when (perf_counter, one clock
        for all the node's processes). The gate opens at the latest slot's time."""
        t = _perf_counter()
        self._slots[rank] = gen
        return t

    def opened(self, rank: int) -> int:
        return int(self._slots[rank])

    def expired(self, rank: int) -> int:
        """How many of `rank`'s gates timed out so far (valid once its device is synchronized)."""
        return int(self._slots[self.world_size + rank])

    def device_pointer(self) -> int:
        """The page as the current GPU sees it (registers the page once)."""
        if not self._registered:
            rc = torch.cuda.cudart().cudaHostRegister(self.host_ptr, PAGE_BYTES, 3)  # portable | mapped
            if int(rc) != 0:
                raise GateUnavailable(f"cudaHostRegister failed ({rc})")
            self._registered = True
        dev_ptr = ctypes.c_uint64()
        libcuda = torch.cuda._utils._get_gpu_runtime_library()
        if libcuda.cuMemHostGetDevicePointer_v2(ctypes.byref(dev_ptr), ctypes.c_void_p(self.host_ptr), 0) != 0:
            raise GateUnavailable("cuMemHostGetDevicePointer failed")
        return dev_ptr.value

    def close(self) -> None:
        if self._registered:
            torch.cuda.cudart().cudaHostUnregister(self.host_ptr)
            self._registered = False


class LaunchGate:
    """One rank's gate kernel over a GatePage. Everything a close() uses is bound here, so
    patching torch's launcher afterwards does not reach the gate (the worker builds it
    before it imports the candidate)."""

    def __init__(self, page: GatePage, rank: int, device: int, timeout_us: int, image: str | None = None) -> None:
        if not 0 < timeout_us < 2**31:
            raise GateUnavailable(f"gate timeout {timeout_us} us is out of range")
        self.page, self.rank = page, rank
        dev_ptr = page.device_pointer()
        props = torch.cuda.get_device_properties(device)
        block = min(1024, props.max_threads_per_multi_processor)
        # Every thread slot of every SM: nothing else can be resident until the gate opens.
        grid = props.multi_processor_count * max(1, props.max_threads_per_multi_processor // block)
        self._go = torch.zeros(1, dtype=torch.int32, device=f"cuda:{device}")
        try:
            if image is None:
                kernel = torch.cuda._compile_kernel(_SRC, "pkb_gate")
            else:  # compiled once by the judge: NVRTC costs a worker 0.1-0.5 s per evaluation
                from torch.cuda._utils import _cuda_load_module
                kernel = _cuda_load_module(base64.b64decode(image, validate=True), ["pkb_gate"])["pkb_gate"]
        except Exception as e:  # noqa: BLE001 - NVRTC missing or failing: no gate
            raise GateUnavailable(f"compiling the gate kernel: {e}") from e
        libcuda = torch.cuda._utils._get_gpu_runtime_library()
        # The launch, prepared once: cuLaunchKernel with fixed arguments but the generation.
        self._gen_arg = ctypes.c_int(0)
        self._args = [ctypes.c_int(_as_i32(dev_ptr & 0xFFFFFFFF)), ctypes.c_int(_as_i32(dev_ptr >> 32)),
                      ctypes.c_int(page.world_size), ctypes.c_int(rank), self._gen_arg,
                      ctypes.c_int(timeout_us), ctypes.c_void_p(self._go.data_ptr())]
        self._params = (ctypes.c_void_p * len(self._args))(
            *[ctypes.cast(ctypes.byref(a), ctypes.c_void_p) for a in self._args])
        self._func, self._grid, self._block = kernel.func, grid, block
        self._kernel = kernel  # keeps the module loaded
        self._launch = libcuda.cuLaunchKernel
        self._stream = torch.cuda.current_stream

    def close(self, gen: int) -> None:
        """Queue the gate for generation `gen` on the current stream."""
        self._gen_arg.value = gen
        rc = self._launch(self._func, self._grid, 1, 1, self._block, 1, 1, 0,
                          ctypes.c_void_p(self._stream().cuda_stream), self._params, None)
        if rc != 0:
            raise RuntimeError(f"launching the gate kernel failed (CUresult {rc})")


def gate_image() -> str:
    """The gate kernel compiled for this process's GPU (NVRTC), base64, to hand to workers
    (a worker compiling it itself costs 0.1-0.2 s, two workers per evaluation; py-spy on
    one H100). NVRTC gives a CUBIN, which is not text: base64, not PTX."""
    from torch.cuda._utils import _nvrtc_compile

    image = _nvrtc_compile(_SRC, "pkb_gate")[0]
    return base64.b64encode(image if isinstance(image, bytes) else image.encode()).decode("ascii")


def _as_i32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >= (1 << 31) else v
