# ---------------------------------------------------------------------------
# Shared machinery of the expert collectives. Each problems/<collective>/expert.py
# says `# pkb:include ../_shared/symm_collectives.py`, and pkb_ray inlines this file
# there when it reads the expert (pkb_ray/problems/includes.py), so each expert is
# still one self-contained candidate module when evaluated.
#
# Kernels are compiled with NVRTC through torch.cuda._compile_kernel: no torch
# headers: the first compile + load on a fresh H200 machine took 0.61 s (later
# loads of this source in that process ~0.02 s), against 47.6 s for a cold
# load_inline. All kernels live in one NVRTC module (one compile per
# process, cached in _KERNELS).
#
# Synchronization: one symmetric buffer per (problem, shape, dtype, device),
# holding TWO slots used alternately (call parity). A call writes its slot,
# then handle.barrier(0), then peers read it. Call e+2 rewrites the slot only
# after passing call e+1's barrier, which every peer reaches only after its
# call-e kernels finished (stream order), so no second barrier per call is
# needed: ~one barrier (~10 us) saved per call for 2x the buffer memory.
# The fast path (FAST, below _pp) keeps the two slots but replaces the barrier
# launch by epoch flags raised and awaited inside the kernels themselves.
# ---------------------------------------------------------------------------
import ctypes
import os
import time

import torch
import torch.distributed as dist
import torch.distributed._symmetric_memory as symm_mem

_SRC = r"""
typedef unsigned long long u64;
typedef long long i64;
struct __align__(16) U4 { unsigned int x, y, z, w; };

#define MAXW 8
#define MAXT 32

__device__ __forceinline__ void acc2(float& lo, float& hi, unsigned int v) {
  lo += __uint_as_float(v << 16);
  hi += __uint_as_float(v & 0xffff0000u);
}
__device__ __forceinline__ unsigned int pack2(float lo, float hi) {
  unsigned int r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

// Table-driven copy. Task t (8 x i64): start, n, src, src_off, dst, dst_off,
// dst2, dst2_off, in units (16 B when vec, else 1 B). src: -1 = x, k >= 0 =
// slot of rank k (a peer's memory over NVLink, or our own). dst/dst2: -2 =
// none, -1 = out, k >= 0 = slot of rank k. Tasks are sorted by start and
// cover [0, total) contiguously.
extern "C" __global__ void __launch_bounds__(512) pull_copy(
    const u64* __restrict__ ptrs, const i64* __restrict__ tasks, int ntasks,
    const unsigned char* __restrict__ x, unsigned char* __restrict__ out,
    int total, int vec) {
  __shared__ i64 ts[MAXT * 8];
  for (int i = threadIdx.x; i < ntasks * 8; i += blockDim.x) ts[i] = tasks[i];
  __syncthreads();
  int t = 0;
  const int stride = gridDim.x * blockDim.x;
  const int g = blockIdx.x * blockDim.x + threadIdx.x;
  if (vec) {
    // 4 independent 16 B loads per thread before any store: more bytes in
    // flight over NVLink (the 1-load version read peers at 299 GB/s).
    for (int base = g; base < total; base += 4 * stride) {
      U4 v[4];
      U4* d1[4];
      U4* d2[4];
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const int i = base + u * stride;
        d1[u] = (U4*)0;
        d2[u] = (U4*)0;
        if (i < total) {
          while (t + 1 < ntasks && (i64)i >= ts[(t + 1) * 8]) ++t;  // i only grows
          const i64* T = ts + t * 8;
          const i64 j = (i64)i - T[0];
          const int s = (int)T[2], d = (int)T[4], e = (int)T[6];
          const U4* sb = s < 0 ? (const U4*)x : (const U4*)ptrs[s];
          v[u] = sb[T[3] + j];
          d1[u] = (d == -1 ? (U4*)out : (U4*)ptrs[d]) + T[5] + j;
          if (e != -2) d2[u] = (e == -1 ? (U4*)out : (U4*)ptrs[e]) + T[7] + j;
        }
      }
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        if (d1[u]) *d1[u] = v[u];
        if (d2[u]) *d2[u] = v[u];
      }
    }
  } else {
    for (int i = g; i < total; i += stride) {
      while (t + 1 < ntasks && (i64)i >= ts[(t + 1) * 8]) ++t;
      const i64* T = ts + t * 8;
      const i64 j = (i64)i - T[0];
      const int s = (int)T[2], d = (int)T[4], e = (int)T[6];
      const unsigned char v = (s < 0 ? x : (const unsigned char*)ptrs[s])[T[3] + j];
      (d == -1 ? out : (unsigned char*)ptrs[d])[T[5] + j] = v;
      if (e != -2) (e == -1 ? out : (unsigned char*)ptrs[e])[T[7] + j] = v;
    }
  }
}

// bf16 sum over ranks in rank order 0..world-1 (fp32 accumulation; every
// rank gets bit-identical results). Own contribution is read from x (local),
// peers' from their slots. Units: 16 B (8 bf16) when vec, else 1 bf16.
// out[out_off + i] = sum_k src_k[i]; also written to our own slot at
// dst2_off when dst2_off >= 0 (two-shot all-reduce).
extern "C" __global__ void __launch_bounds__(512) pull_reduce(
    const u64* __restrict__ ptrs, const unsigned char* __restrict__ x,
    unsigned char* __restrict__ out, int rank, int world, int src_off,
    int x_off, int out_off, int dst2_off, int n, int vec) {
  const int stride = gridDim.x * blockDim.x;
  const int i0 = blockIdx.x * blockDim.x + threadIdx.x;
  if (vec) {
    const U4* src[MAXW];
#pragma unroll
    for (int k = 0; k < MAXW; ++k)
      src[k] = k < world ? (k == rank ? (const U4*)x + x_off
                                      : (const U4*)ptrs[k] + src_off)
                         : (const U4*)0;
    U4* o = (U4*)out + out_off;
    U4* o2 = dst2_off >= 0 ? (U4*)ptrs[rank] + dst2_off : (U4*)0;
    // two units per thread per step: 2 * world independent loads in flight
    for (int i = i0; i < n; i += 2 * stride) {
      const int i2 = i + stride;
      const bool has2 = i2 < n;
      U4 v[MAXW], w[MAXW];
#pragma unroll
      for (int k = 0; k < MAXW; ++k)
        if (k < world) {
          v[k] = src[k][i];
          if (has2) w[k] = src[k][i2];
        }
      float a0 = 0.f, a1 = 0.f, a2 = 0.f, a3 = 0.f, a4 = 0.f, a5 = 0.f,
            a6 = 0.f, a7 = 0.f;
      float b0 = 0.f, b1 = 0.f, b2 = 0.f, b3 = 0.f, b4 = 0.f, b5 = 0.f,
            b6 = 0.f, b7 = 0.f;
#pragma unroll
      for (int k = 0; k < MAXW; ++k)
        if (k < world) {
          acc2(a0, a1, v[k].x); acc2(a2, a3, v[k].y);
          acc2(a4, a5, v[k].z); acc2(a6, a7, v[k].w);
          if (has2) {
            acc2(b0, b1, w[k].x); acc2(b2, b3, w[k].y);
            acc2(b4, b5, w[k].z); acc2(b6, b7, w[k].w);
          }
        }
      U4 r;
      r.x = pack2(a0, a1); r.y = pack2(a2, a3);
      r.z = pack2(a4, a5); r.w = pack2(a6, a7);
      o[i] = r;
      if (o2) o2[i] = r;
      if (has2) {
        U4 q;
        q.x = pack2(b0, b1); q.y = pack2(b2, b3);
        q.z = pack2(b4, b5); q.w = pack2(b6, b7);
        o[i2] = q;
        if (o2) o2[i2] = q;
      }
    }
  } else {
    const unsigned short* src[MAXW];
#pragma unroll
    for (int k = 0; k < MAXW; ++k)
      src[k] = k < world ? (k == rank ? (const unsigned short*)x + x_off
                                      : (const unsigned short*)ptrs[k] + src_off)
                         : (const unsigned short*)0;
    unsigned short* o = (unsigned short*)out + out_off;
    unsigned short* o2 = dst2_off >= 0 ? (unsigned short*)ptrs[rank] + dst2_off
                                       : (unsigned short*)0;
    for (int i = i0; i < n; i += stride) {
      float a = 0.f;
#pragma unroll
      for (int k = 0; k < MAXW; ++k)
        if (k < world) a += __uint_as_float(((unsigned int)src[k][i]) << 16);
      const unsigned short r = (unsigned short)(pack2(a, 0.f) & 0xffffu);
      o[i] = r;
      if (o2) o2[i] = r;
    }
  }
}
// ---- pipelined single-kernel variant (PIPELINED = True) -----------------
// No barrier launch and no serial copy-in: each block walks chunks
// c = blockIdx.x, +gridDim.x, ...; for each it publishes the chunk of x into
// its own slot, raises flag[rank][c] = epoch in every peer's flag array
// (release, system scope), then waits for the peers' flags for chunk c
// (acquire) and pulls/reduces that chunk. Local copies of later chunks thus
// overlap NVLink reads of earlier ones. The grid is one block per SM (all
// blocks co-resident), and a block publishes chunk c before it waits on chunk
// c, so no wait cycle can form. Cross-call safety: slot parity alternates;
// a rank rewrites parity p in call e+2 only after its call e+1 saw every
// peer's e+1 flags, raised after those peers finished call e.
__device__ __forceinline__ void pp_signal(const u64* fptrs, int rank, int world,
                                          int nch, int c, unsigned int epoch) {
  if (threadIdx.x < world && threadIdx.x != rank) {
    __threadfence_system();
    unsigned int* f = (unsigned int*)fptrs[threadIdx.x] + rank * nch + c;
    asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(f), "r"(epoch) : "memory");
  }
}
__device__ __forceinline__ void pp_wait(const u64* fptrs, int rank, int world,
                                        int nch, int c, unsigned int epoch) {
  if (threadIdx.x < world && threadIdx.x != rank) {
    const unsigned int* f = (const unsigned int*)fptrs[rank] + threadIdx.x * nch + c;
    u64 t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    while (true) {
      unsigned int v;
      asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(f) : "memory");
      if ((int)(v - epoch) >= 0) break;
      asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
      if (t - t0 > 5000000000ull) break;  // 5 s: give a wrong answer, never hang
    }
  }
  __syncthreads();
}

// Units are 16 B. Publish: i in [0,total) outside [skip_lo,skip_hi) -> own
// slot[i]; i in [own_lo,own_hi) -> out[own_out + i - own_lo]. Consume
// i in [cons_lo,cons_hi): mode 0 (copy): out[k*out_stride + i - cons_lo] =
// slot_k[i] for every peer k; mode 1 (bf16 sum): out[i - cons_lo] =
// sum_k (k == rank ? x[i] : slot_k[i]).
extern "C" __global__ void __launch_bounds__(512, 1) pp_run(
    const u64* __restrict__ ptrs, const u64* __restrict__ fptrs,
    const U4* __restrict__ x, U4* __restrict__ out, int rank, int world,
    int mode, int total, int chunk, int skip_lo, int skip_hi, int own_lo,
    int own_hi, int own_out, int cons_lo, int cons_hi, int out_stride,
    int epoch) {
  const int nch = (total + chunk - 1) / chunk;
  U4* my = (U4*)ptrs[rank];
  const unsigned int ep = (unsigned int)epoch;
  for (int c = blockIdx.x; c < nch; c += gridDim.x) {
    const int lo = c * chunk, hi = min(lo + chunk, total);
    for (int i = lo + threadIdx.x; i < hi; i += blockDim.x) {
      const bool pub = i < skip_lo || i >= skip_hi;
      const bool own = i >= own_lo && i < own_hi;
      if (pub || own) {
        const U4 v = x[i];
        if (pub) my[i] = v;
        if (own) out[own_out + i - own_lo] = v;
      }
    }
    __syncthreads();
    pp_signal(fptrs, rank, world, nch, c, ep);
    const int a = max(lo, cons_lo), b = min(hi, cons_hi);
    if (a >= b) continue;
    pp_wait(fptrs, rank, world, nch, c, ep);
    if (mode == 0) {
      for (int k = 0; k < world; ++k) {
        if (k == rank) continue;
        const U4* src = (const U4*)ptrs[k];
        U4* dst = out + (i64)k * out_stride - cons_lo;
        for (int base = a + threadIdx.x; base < b; base += 4 * blockDim.x) {
          U4 v[4];
#pragma unroll
          for (int u = 0; u < 4; ++u) {
            const int i = base + u * blockDim.x;
            if (i < b) v[u] = src[i];
          }
#pragma unroll
          for (int u = 0; u < 4; ++u) {
            const int i = base + u * blockDim.x;
            if (i < b) dst[i] = v[u];
          }
        }
      }
    } else {
      // two units per thread per step: 2 * world loads in flight (1 block/SM)
      for (int i = a + threadIdx.x; i < b; i += 2 * blockDim.x) {
        const int i2 = i + blockDim.x;
        const bool has2 = i2 < b;
        U4 v[MAXW], w[MAXW];
#pragma unroll
        for (int k = 0; k < MAXW; ++k)
          if (k < world) {
            const U4* src = k == rank ? x : (const U4*)ptrs[k];
            v[k] = src[i];
            if (has2) w[k] = src[i2];
          }
        float a0 = 0.f, a1 = 0.f, a2 = 0.f, a3 = 0.f, a4 = 0.f, a5 = 0.f,
              a6 = 0.f, a7 = 0.f;
        float b0 = 0.f, b1 = 0.f, b2 = 0.f, b3 = 0.f, b4 = 0.f, b5 = 0.f,
              b6 = 0.f, b7 = 0.f;
#pragma unroll
        for (int k = 0; k < MAXW; ++k)
          if (k < world) {
            acc2(a0, a1, v[k].x); acc2(a2, a3, v[k].y);
            acc2(a4, a5, v[k].z); acc2(a6, a7, v[k].w);
            if (has2) {
              acc2(b0, b1, w[k].x); acc2(b2, b3, w[k].y);
              acc2(b4, b5, w[k].z); acc2(b6, b7, w[k].w);
            }
          }
        U4 r;
        r.x = pack2(a0, a1); r.y = pack2(a2, a3);
        r.z = pack2(a4, a5); r.w = pack2(a6, a7);
        out[i - cons_lo] = r;
        if (has2) {
          U4 q;
          q.x = pack2(b0, b1); q.y = pack2(b2, b3);
          q.z = pack2(b4, b5); q.w = pack2(b6, b7);
          out[i2 - cons_lo] = q;
        }
      }
    }
    __syncthreads();  // all reads of this chunk done before the next publish
  }
}
// ---- fast path (FAST = True): the barrier folded into the kernels --------
// One symmetric uint32 array per state; on rank r, word ph*MAXW + k holds the
// last epoch (call number) rank k signalled for phase ph, and word
// 2*MAXW + ph counts this rank's finished blocks of the signalling kernel.
// A kernel with sig_ph >= 0 signals when its LAST block finishes (every block
// fences its writes and bumps the counter; the block that
// takes the counter to gridDim.x resets it and stores the epoch into every
// peer's word with release semantics). A kernel with wait_ph >= 0 spins, one
// thread per peer, until every peer's word reached this epoch (acquire), then
// the whole block proceeds (a wait that times out, 5 s, sets word 2*MAXW+2
// so that the remaining blocks and calls fail fast instead of hanging). So "copy + barrier + pull" is 2 launches instead
// of copy + barrier kernel + pull, and no handle.barrier host call (which
// also resolves the process group and records a comms event on each call).
// Epoch comparison is wrap-safe; words only grow, so a peer already one call
// ahead does not break a wait. Two-slot safety is the same argument as with
// the barrier: call e+2 rewrites slot e&1 only after waiting (in call e+1)
// for every peer's call-e+1 signal, raised after that peer's call-e reads.
__device__ __forceinline__ void f_wait(const u64* fl, int rank, int world,
                                       int ph, unsigned int epoch) {
  if (ph < 0) return;
  if (threadIdx.x < world && threadIdx.x != rank) {
    const unsigned int* f = (const unsigned int*)fl[rank] + ph * MAXW + threadIdx.x;
    volatile unsigned int* err = (volatile unsigned int*)fl[rank] + 2 * MAXW + 2;
    u64 t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    while (true) {
      unsigned int v;
      asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(f) : "memory");
      if ((int)(v - epoch) >= 0 || *err) break;
      asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
      if (t - t0 > 5000000000ull) {  // 5 s: give a wrong answer, never hang, and
        *err = 1u;                   // make every later wait of this state give up at once
        break;
      }
    }
  }
  __syncthreads();
}

__device__ __forceinline__ void f_signal(const u64* fl, int rank, int world,
                                         int ph, unsigned int epoch) {
  if (ph < 0) return;
  // Peers read our memory through our L2, so GPU scope suffices for the data:
  // each thread's writes -> fence.gpu -> bar.sync -> thread 0's fence + atomic
  // (release pattern) -> the last block's atomic + fence (acquire pattern) ->
  // its system-scope release to the peers: one causality chain.
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned int* cnt = (unsigned int*)fl[rank] + 2 * MAXW + ph;
    __threadfence();
    if (atomicAdd(cnt, 1u) == gridDim.x - 1) {  // last block of this launch
      *cnt = 0u;  // next launch starts after this one (stream order)
      __threadfence_system();
      for (int k = 0; k < world; ++k) {
        if (k == rank) continue;
        unsigned int* f = (unsigned int*)fl[k] + ph * MAXW + rank;
        asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(f), "r"(epoch) : "memory");
      }
    }
  }
}

// pull_copy with f_wait before and f_signal after (same task table format).
extern "C" __global__ void __launch_bounds__(512) f_copy(
    const u64* __restrict__ fl, int rank, int world, int wait_ph, int sig_ph,
    unsigned int epoch, const u64* __restrict__ ptrs,
    const i64* __restrict__ tasks, int ntasks, const unsigned char* x,
    unsigned char* out, int total, int vec) {
  __shared__ i64 ts[MAXT * 8];
  for (int i = threadIdx.x; i < ntasks * 8; i += blockDim.x) ts[i] = tasks[i];
  f_wait(fl, rank, world, wait_ph, epoch);  // includes __syncthreads when waiting
  __syncthreads();
  int t = 0;
  const int stride = gridDim.x * blockDim.x;
  const int g = blockIdx.x * blockDim.x + threadIdx.x;
  if (vec) {
    for (int base = g; base < total; base += 4 * stride) {
      U4 v[4];
      U4* d1[4];
      U4* d2[4];
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const int i = base + u * stride;
        d1[u] = (U4*)0;
        d2[u] = (U4*)0;
        if (i < total) {
          while (t + 1 < ntasks && (i64)i >= ts[(t + 1) * 8]) ++t;
          const i64* T = ts + t * 8;
          const i64 j = (i64)i - T[0];
          const int s = (int)T[2], d = (int)T[4], e = (int)T[6];
          const U4* sb = s < 0 ? (const U4*)x : (const U4*)ptrs[s];
          v[u] = sb[T[3] + j];
          d1[u] = (d == -1 ? (U4*)out : (U4*)ptrs[d]) + T[5] + j;
          if (e != -2) d2[u] = (e == -1 ? (U4*)out : (U4*)ptrs[e]) + T[7] + j;
        }
      }
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        if (d1[u]) *d1[u] = v[u];
        if (d2[u]) *d2[u] = v[u];
      }
    }
  } else {
    for (int i = g; i < total; i += stride) {
      while (t + 1 < ntasks && (i64)i >= ts[(t + 1) * 8]) ++t;
      const i64* T = ts + t * 8;
      const i64 j = (i64)i - T[0];
      const int s = (int)T[2], d = (int)T[4], e = (int)T[6];
      const unsigned char v = (s < 0 ? x : (const unsigned char*)ptrs[s])[T[3] + j];
      (d == -1 ? out : (unsigned char*)ptrs[d])[T[5] + j] = v;
      if (e != -2) (e == -1 ? out : (unsigned char*)ptrs[e])[T[7] + j] = v;
    }
  }
  f_signal(fl, rank, world, sig_ph, epoch);
}

// pull_reduce (16 B units only) with f_wait before and f_signal after.
extern "C" __global__ void __launch_bounds__(512) f_reduce(
    const u64* __restrict__ fl, int rank, int world, int wait_ph, int sig_ph,
    unsigned int epoch, const u64* __restrict__ ptrs, const unsigned char* x,
    unsigned char* out, int src_off, int x_off, int out_off, int dst2_off, int n) {
  f_wait(fl, rank, world, wait_ph, epoch);
  const int stride = gridDim.x * blockDim.x;
  const int i0 = blockIdx.x * blockDim.x + threadIdx.x;
  const U4* src[MAXW];
#pragma unroll
  for (int k = 0; k < MAXW; ++k)
    src[k] = k < world ? (k == rank ? (const U4*)x + x_off
                                    : (const U4*)ptrs[k] + src_off)
                       : (const U4*)0;
  U4* o = (U4*)out + out_off;
  U4* o2 = dst2_off >= 0 ? (U4*)ptrs[rank] + dst2_off : (U4*)0;
  for (int i = i0; i < n; i += 2 * stride) {
    const int i2 = i + stride;
    const bool has2 = i2 < n;
    U4 v[MAXW], w[MAXW];
#pragma unroll
    for (int k = 0; k < MAXW; ++k)
      if (k < world) {
        v[k] = src[k][i];
        if (has2) w[k] = src[k][i2];
      }
    float a0 = 0.f, a1 = 0.f, a2 = 0.f, a3 = 0.f, a4 = 0.f, a5 = 0.f,
          a6 = 0.f, a7 = 0.f;
    float b0 = 0.f, b1 = 0.f, b2 = 0.f, b3 = 0.f, b4 = 0.f, b5 = 0.f,
          b6 = 0.f, b7 = 0.f;
#pragma unroll
    for (int k = 0; k < MAXW; ++k)
      if (k < world) {
        acc2(a0, a1, v[k].x); acc2(a2, a3, v[k].y);
        acc2(a4, a5, v[k].z); acc2(a6, a7, v[k].w);
        if (has2) {
          acc2(b0, b1, w[k].x); acc2(b2, b3, w[k].y);
          acc2(b4, b5, w[k].z); acc2(b6, b7, w[k].w);
        }
      }
    U4 r;
    r.x = pack2(a0, a1); r.y = pack2(a2, a3);
    r.z = pack2(a4, a5); r.w = pack2(a6, a7);
    o[i] = r;
    if (o2) o2[i] = r;
    if (has2) {
      U4 q;
      q.x = pack2(b0, b1); q.y = pack2(b2, b3);
      q.z = pack2(b4, b5); q.w = pack2(b6, b7);
      o[i2] = q;
      if (o2) o2[i2] = q;
    }
  }
  f_signal(fl, rank, world, sig_ph, epoch);
}
"""

_MAXW = 8
_MAXT = 32
_THREADS = 512
_KERNELS = {}  # device index -> (pull_copy, pull_reduce, pp_run, f_copy, f_reduce)
_STATES = {}  # (tag, slot_bytes, dtype, device) -> _State
COMPILE_SECONDS = None  # wall time of this process's NVRTC compile + module load


_LIBCUDA = []


class _FastLaunch:
    """cuLaunchKernel through a cached libcuda handle. torch's _CudaKernel
    re-opens libcuda on every call; with a barrier and up to three launches per
    collective that host time showed up in the measured call (first device run:
    0.20 ms for an 8 MiB all-to-all whose transfer takes ~0.03 ms)."""

    def __init__(self, kernel):
        if not _LIBCUDA:
            _LIBCUDA.append(ctypes.CDLL("libcuda.so.1"))
        self.kernel = kernel  # keeps the module loaded
        self.func = kernel.func

    def __call__(self, grid, block, args):
        vals = [ctypes.c_void_p(a.data_ptr()) if isinstance(a, torch.Tensor) else ctypes.c_int(a) for a in args]
        arr = (ctypes.c_void_p * len(vals))(*[ctypes.addressof(v) for v in vals])
        rc = _LIBCUDA[0].cuLaunchKernel(self.func, grid[0], grid[1], grid[2], block[0], block[1], block[2], 0,
                                        ctypes.c_void_p(torch.cuda.current_stream().cuda_stream), arr, None)
        if rc != 0:
            raise RuntimeError(f"cuLaunchKernel failed with CUDA error {rc}")


class _CupyLaunch:
    """Fallback launcher if torch.cuda._compile_kernel is missing."""

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, grid, block, args):
        import cupy
        import numpy as np

        conv = [np.uint64(a.data_ptr()) if isinstance(a, torch.Tensor) else np.int32(a) for a in args]
        with cupy.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream):
            self.fn(grid, block, tuple(conv))


def _kernels():
    dev = torch.cuda.current_device()
    ks = _KERNELS.get(dev)
    if ks is None:
        global COMPILE_SECONDS
        t0 = time.perf_counter()
        try:
            from torch.cuda._utils import _CudaModule

            first = torch.cuda._compile_kernel(_SRC, "pull_copy")
            mod = _CudaModule(first.module)
            ks = (_FastLaunch(first), _FastLaunch(mod.pull_reduce), _FastLaunch(mod.pp_run),
                  _FastLaunch(mod.f_copy), _FastLaunch(mod.f_reduce))
        except (AttributeError, ImportError):
            import cupy

            with cupy.cuda.Device(dev):
                mod = cupy.RawModule(code=_SRC)
                ks = tuple(_CupyLaunch(mod.get_function(k)) for k in ("pull_copy", "pull_reduce", "pp_run", "f_copy", "f_reduce"))
        COMPILE_SECONDS = time.perf_counter() - t0
        _KERNELS[dev] = ks
    return ks


def _grid(units, per_thread=1):
    sms = torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count
    # 4 blocks of 512 threads per SM fill the chip (2048 threads/SM on Hopper);
    # with 16 B per thread that is ~4 MB of loads in flight, far above the
    # ~1 MB that NVLink's bandwidth-latency product needs.
    per_block = _THREADS * per_thread
    return (max(1, min((units + per_block - 1) // per_block, sms * 4)), 1, 1)


class _State:
    def __init__(self, slot_bytes, dtype, device):
        es = torch.empty((), dtype=dtype).element_size()
        self.slot_bytes = slot_bytes
        self.buf = symm_mem.empty(2 * slot_bytes // es, dtype=dtype, device=device)
        self.handle = symm_mem.rendezvous(self.buf, dist.group.WORLD)
        self.rank = self.handle.rank
        self.world = self.handle.world_size
        base = torch.tensor(list(self.handle.buffer_ptrs), dtype=torch.int64)
        # per slot, the address of every rank's slot (ptr table read by kernels)
        self.ptrs = torch.stack([base, base + slot_bytes]).to(device)
        self.calls = 0
        self.tables = {}
        self.peer_bytes = {}

    def peer(self, k):
        """This call's view of rank k's whole buffer, as bytes (copy-engine path)."""
        v = self.peer_bytes.get(k)
        if v is None:
            v = self.peer_bytes[k] = self.handle.get_buffer(k, (2 * self.slot_bytes,), torch.uint8)
        return v

    def next_slot(self):
        s = self.calls & 1
        self.calls += 1
        return s

    def slot_bytes_view(self, s):
        return self.buf.view(torch.uint8)[s * self.slot_bytes:(s + 1) * self.slot_bytes]

    def barrier(self):
        self.handle.barrier(0)


def _round_up(n, m):
    return (n + m - 1) // m * m


def _state(tag, slot_bytes, dtype, device):
    key = (tag, slot_bytes, dtype, str(device))
    st = _STATES.get(key)
    if st is None:
        st = _State(_round_up(max(slot_bytes, 16), 256), dtype, device)
        _STATES[key] = st
    return st


def _prep(x):
    x = x.contiguous()
    if x.data_ptr() % 16:
        x = x.clone()
    return x


def _copy(st, s, x, out, tasks, vec):
    """tasks: list of (n, src, src_off, dst, dst_off, dst2, dst2_off) in bytes."""
    unit = 16 if vec else 1
    rows, start = [], 0
    for n, src, so, dst, do, d2, d2o in tasks:
        if n <= 0:
            continue
        rows.append([start, n // unit, src, so // unit, dst, do // unit, d2, d2o // unit])
        start += n // unit
    if not rows:
        return
    assert len(rows) <= _MAXT
    key = (s, tuple(map(tuple, rows)))
    tab = st.tables.get(key)
    if tab is None:  # task tables depend only on shapes and rank: build once
        tab = torch.tensor(rows, dtype=torch.int64).to(x.device)
        st.tables[key] = tab
    copy_k = _kernels()[0]
    copy_k(_grid(start, 4 if vec else 1), (_THREADS, 1, 1), [st.ptrs[s], tab, len(rows), x, out, start, int(vec)])


def _vec_ok(*nbytes):
    return all(b % 16 == 0 for b in nbytes)


# Pull peers' chunks with cudaMemcpyAsync (the copy engines) instead of the SM
# kernel. First device run, 256 MiB peer read with both ranks reading at once:
# copy engine 367 GB/s, SM kernel (one 16 B load per thread) 299 GB/s.
COPY_ENGINE = False


def _pull(st, s, x, out, tasks, vec):
    """Remote phase: tasks (n, src_rank, src_off, -1, dst_off, -2, 0) in bytes."""
    if not COPY_ENGINE:
        return _copy(st, s, x, out, tasks, vec)
    ob = out.view(-1).view(torch.uint8)
    base = s * st.slot_bytes
    for n, src, so, dst, do, d2, _ in tasks:
        if n <= 0:
            continue
        assert src >= 0 and dst == -1 and d2 == -2
        ob[do:do + n].copy_(st.peer(src)[base + so:base + so + n])


# Single-kernel pipelined variant (see pp_run). Off by default until measured.
PIPELINED = False
_PP_CHUNKS_PER_BLOCK = 8


def _pp_flags(st):
    """Flag array [world][max chunks] of uint32, its own symmetric buffer."""
    if getattr(st, "fptrs", None) is None:
        sms = torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count
        st.pp_grid = sms  # one 512-thread block per SM: all blocks co-resident
        st.pp_max_chunks = sms * _PP_CHUNKS_PER_BLOCK + 8
        st.flags = symm_mem.empty(st.world * st.pp_max_chunks, dtype=torch.int32, device=st.buf.device)
        st.flags.zero_()
        st.fhandle = symm_mem.rendezvous(st.flags, dist.group.WORLD)
        st.fptrs = torch.tensor(list(st.fhandle.buffer_ptrs), dtype=torch.int64).to(st.buf.device)
        st.fhandle.barrier(0)  # every rank zeroed its flags before anyone signals


def _pp(st, s, x, out, mode, total, skip=(0, 0), own=(0, 0), own_out=0, cons=(0, 0), out_stride=0):
    """Launch pp_run; all offsets in 16-byte units. Epoch = this call's number."""
    _pp_flags(st)
    chunk = max(512, -(-total // (st.pp_grid * _PP_CHUNKS_PER_BLOCK)))
    assert -(-total // chunk) <= st.pp_max_chunks
    pp_k = _kernels()[2]
    pp_k((st.pp_grid, 1, 1), (_THREADS, 1, 1),
         [st.ptrs[s], st.fptrs, x, out, st.rank, st.world, mode, total, chunk, skip[0], skip[1], own[0], own[1],
          own_out, cons[0], cons[1], out_stride, st.calls])


# ---------------------------------------------------------------------------
# Fast path (FAST = True, the default; PKB_EXPERT_FAST=0 or FAST = False runs
# _barrier_path). The first device check measured 64-124 us of Python per
# call (slicing views, torch copy_, handle.barrier, per-call argument packing),
# all of it inside the timed call because the GPU idled waiting for launches.
# Here everything that depends only on (shape, dtype, device) is built once
# into a _Plan: per slot, the launches with their ctypes argument arrays, where
# only the input pointer, the output pointer and the epoch change per call.
# The barrier lives inside the kernels (f_wait / f_signal in _SRC), so a
# call is one output allocation plus 2 (two-shot / scatter: 3) cuLaunchKernel
# calls. CUDA graphs were considered: handle.barrier is capturable, but a
# graph bakes in the input and output pointers, so every call would need
# either an extra 64 MiB copy into a static buffer (~32 us of HBM time at
# bench size) or per-node parameter updates, which cost what a launch costs.
# ---------------------------------------------------------------------------
FAST = os.environ.get("PKB_EXPERT_FAST", "1") != "0"
_PLANS = {}  # (shape, dtype, device index) -> _Plan, or False where the fast path does not apply
_X, _OUT, _EP = object(), object(), object()  # per-call arguments of a launch spec
_FAST_LAUNCH = []
FAST_ERRORS = []  # why a plan could not be built (the call then took _barrier_path)


class _Ptr(int):
    """A pointer-sized kernel argument given as an int."""


def _fast_launch_fn():
    if not _FAST_LAUNCH:
        # a CDLL instance of our own, so argtypes here do not touch _FastLaunch's
        fn = ctypes.CDLL("libcuda.so.1").cuLaunchKernel
        fn.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3
        fn.restype = ctypes.c_int
        _FAST_LAUNCH.append(fn)
    return _FAST_LAUNCH[0]


def _raw_stream_fn():
    get = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if get is not None:
        return get
    return lambda dev: torch.cuda.current_stream(dev).cuda_stream


def _fast_sync(st):
    """Flag words of the fast path: a symmetric uint32 array per state."""
    if getattr(st, "fl", None) is None:
        st.fl = symm_mem.empty(64, dtype=torch.int32, device=st.buf.device)
        st.fl.zero_()
        st.flhandle = symm_mem.rendezvous(st.fl, dist.group.WORLD)
        st.flptrs = torch.tensor(list(st.flhandle.buffer_ptrs), dtype=torch.int64).to(st.buf.device)
        st.flhandle.barrier(0)  # every rank zeroed its words before anyone signals
        torch.cuda.synchronize()
    return st.flptrs


def _rows(tasks, vec):
    """Task table rows (see pull_copy) from (n, src, src_off, dst, dst_off, dst2, dst2_off) in bytes."""
    unit = 16 if vec else 1
    rows, start = [], 0
    for n, src, so, dst, do, d2, d2o in tasks:
        if n <= 0:
            continue
        rows.append([start, n // unit, src, so // unit, dst, do // unit, d2, d2o // unit])
        start += n // unit
    assert len(rows) <= _MAXT
    return rows, start


def _fc(st, s, wait, sig, tasks):
    """Launch spec of f_copy (vec = 1, 16-byte units): wait on phase `wait`, copy, signal phase `sig`."""
    rows, total = _rows(tasks, True)
    tab = torch.tensor(rows or [[0] * 8], dtype=torch.int64).to(st.buf.device)
    return (3, _grid(total, 4)[0], [_fast_sync(st), st.rank, st.world, wait, sig, _EP, st.ptrs[s], tab, len(rows),
                                    _X, _OUT, total, 1])


def _fr(st, s, wait, sig, src_off, x_off, out_off, dst2_off, n):
    """Launch spec of f_reduce (bf16 sum, 16-byte units)."""
    return (4, _grid(max(n, 1))[0], [_fast_sync(st), st.rank, st.world, wait, sig, _EP, st.ptrs[s], _X, _OUT,
                                     src_off, x_off, out_off, dst2_off, n])


class _Plan:
    """Every launch of one call shape, for both slots, with argument arrays built once."""

    def __init__(self, st, make, out_shape, dtype, device):
        ks = _kernels()
        if not all(isinstance(k, _FastLaunch) for k in ks):
            raise RuntimeError("fast path needs torch.cuda._compile_kernel kernels")
        self.st = st
        self.out_shape = tuple(out_shape)
        self.dtype = dtype
        self.device = torch.device(device)
        self.dev = self.device.index if self.device.index is not None else torch.cuda.current_device()
        self.xv, self.ov, self.ev = ctypes.c_void_p(0), ctypes.c_void_p(0), ctypes.c_uint(0)
        self.keep = []  # tensors and ctypes objects the argument arrays point at
        self.launches = []
        for s in (0, 1):
            seq = []
            for kidx, grid, args in make(s):
                objs = [self._arg(a) for a in args]
                arr = (ctypes.c_void_p * len(objs))(*[ctypes.addressof(o) for o in objs])
                self.keep.append((objs, arr))
                seq.append((ks[kidx].func, int(grid), ctypes.addressof(arr)))
            self.launches.append(tuple(seq))
        self.launch = _fast_launch_fn()
        self.stream = _raw_stream_fn()

    def _arg(self, a):
        if a is _X:
            return self.xv
        if a is _OUT:
            return self.ov
        if a is _EP:
            return self.ev
        if isinstance(a, torch.Tensor):
            self.keep.append(a)
            return ctypes.c_void_p(a.data_ptr())
        if isinstance(a, _Ptr):
            return ctypes.c_void_p(int(a))
        return ctypes.c_int(int(a))

    def __call__(self, x):
        out = torch.empty(self.out_shape, dtype=self.dtype, device=self.device)
        st = self.st
        s = st.calls & 1
        st.calls += 1
        self.xv.value = x.data_ptr()
        self.ov.value = out.data_ptr()
        self.ev.value = st.calls & 0xFFFFFFFF
        stream = self.stream(self.dev)
        launch = self.launch
        for func, grid, arr in self.launches[s]:
            rc = launch(func, grid, 1, 1, _THREADS, 1, 1, 0, stream, arr, None)
            if rc != 0:
                raise RuntimeError(f"cuLaunchKernel failed with CUDA error {rc}")
        return out


def _fast_call(x, build):
    """Run x through its cached _Plan; None where the fast path does not apply
    (then the caller takes _barrier_path). build(x) -> _Plan or None."""
    if not FAST or COPY_ENGINE or PIPELINED or not x.is_contiguous() or x.data_ptr() % 16:
        return None
    key = (x.shape, x.dtype, x.get_device())
    p = _PLANS.get(key)
    if p is None:
        try:
            p = build(x)
        except Exception as exc:  # same code and shapes on every rank, so every rank falls back alike
            FAST_ERRORS.append(f"{type(exc).__name__}: {exc}")
            p = None
        _PLANS[key] = p if p is not None else False
    if not p:
        return None
    return p(x)


