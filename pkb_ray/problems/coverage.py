"""`pkb problems coverage`: which native problems cover each upstream PKB problem (1-87).

A problem covers an upstream id when its problem.yaml lists the id under `upstream:` (the
same mathematics and communication pattern); `upstream_partial:` ids are shown beside it but
do not count. The suite also needs MIN_PER_CATEGORY problems in every category.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from pkb_ray.problems.spec import CATEGORIES

UPSTREAM_COUNT = 87
MIN_PER_CATEGORY = 5

UPSTREAM_NAMES: dict[int, str] = {
    1: "allreduce", 2: "allgather", 3: "broadcast", 4: "reduce", 5: "scatter", 6: "gather",
    7: "reducescatter", 8: "alltoall", 9: "layernorm_backward", 10: "embedding_lookup",
    11: "allgather_gemm_AT", 12: "allgather_gemm", 13: "gemm_allreduce", 14: "gemm_allgather",
    15: "combined_sharded_gemms", 16: "gemm_reducescatter", 17: "rope_allgather",
    18: "tp_rms_norm", 19: "blocked_fp8_quantize", 20: "blocked_fp8_dequantize",
    21: "clip_grad_norm_no_ep", 22: "clip_grad_norm_ep", 23: "grad_acc_loss",
    24: "load_balancing_loss_fn", 25: "importance_sampling_loss", 26: "moe_token_preprocess",
    27: "moe_all2all_primitive", 28: "moe_pre_all2all", 29: "moe_post_all2all",
    30: "moe_epgroupgemm_lora_backward", 31: "fused_moe_fwd", 32: "fused_moe_fwd_lora",
    33: "ulysses_all_to_all_tensor_primitive", 34: "ulysses_all_gather_into_tensor_primitive",
    35: "ulysses_all_gather_variable_primitive", 36: "ulysses_gather_seq_scatter_heads",
    37: "ulysses_gather_heads_scatter_seq", 38: "ulysses_gather_seq_scatter_heads_qkv",
    39: "ulysses_attention_e2e", 40: "ddp", 41: "zero1_optimizer_shard",
    42: "zero2_optimizer_shard_grad", 43: "fused_adam_grad_unshard_allgather",
    44: "quantized_grad_allreduce", 45: "reducescatter_fused_rmsnorm", 46: "gemv_decode",
    47: "fsdp_step_e2e", 48: "fsdp_and_tp", 49: "moe_ep_balanced", 50: "moe_ep_wide",
    51: "moe_ep_narrow", 52: "fp8_reduce_scatter_grads", 53: "fp8_allgather_params",
    54: "ring_attention", 55: "ring_attention_tp", 56: "ring_attention_pp",
    57: "ring_attention_backward_dp", 58: "openclip_contrastive_loss",
    59: "physicsnemo_distributed_rfft", 60: "physicsnemo_distributed_irfft",
    61: "gsplat_3d_gaussian_splatting", 62: "torchharmonics_spherical_convolution",
    63: "deepmd_kalman_filter_optimizer", 64: "gnn_neighbor_sampling",
    65: "gnn_feature_exchange_all2all", 66: "gnn_feature_exchange_all2all_backward",
    67: "gnn_sparse_embedding_all2all", 68: "gnn_sparse_feature_fetch_projection",
    69: "gnn_negative_scoring", 70: "torchrec_kjt_all2all", 71: "hyena_conv1d_boundary_exchange",
    72: "hyena_forward_cp", 73: "vocab_parallel_cross_entropy_loss",
    74: "fla_kimi_delta_attention_cp_tp", 75: "fla_gated_deltanet_cp",
    76: "opensora_conv3d_allreduce", 77: "magi1_cso_async_attention",
    78: "magi1_tile_parallel_vae_decode", 79: "dinov2_distributed_knn",
    80: "dinov2_distributed_sinkhorn_knopp", 81: "sam3_allgather_iou_suppression",
    82: "vocab_parallel_log_prob_topk", 83: "vocab_parallel_log_prob_topk_chunked",
    84: "vocab_parallel_log_prob_topk_chunked_backward", 85: "distributed_sample_sort",
    86: "tp_muon_orthogonalization", 87: "conv2d_boundary_exchange",
}
"""Upstream PKB's reference file names (reference/<id>_<name>.py), for readable reports."""


@dataclass
class Coverage:
    covered_by: dict[int, list[str]] = field(default_factory=dict)
    """Upstream id -> native problems that compute the same thing."""
    partial: dict[int, list[str]] = field(default_factory=dict)
    """Upstream id -> native problems that resemble it."""
    per_category: dict[str, int] = field(default_factory=dict)
    total: int = 0

    @property
    def missing(self) -> list[int]:
        return [i for i in range(1, UPSTREAM_COUNT + 1) if not self.covered_by.get(i)]

    @property
    def short_categories(self) -> dict[str, int]:
        return {c: n for c, n in self.per_category.items() if n < MIN_PER_CATEGORY}


def coverage(problems) -> Coverage:
    """The mapping from the loaded problems' `upstream` / `upstream_partial` fields."""
    cov = Coverage(total=len(problems))
    for pid, p in sorted(problems.items()):
        for u in p.spec.upstream:
            cov.covered_by.setdefault(u, []).append(pid)
        for u in p.spec.upstream_partial:
            cov.partial.setdefault(u, []).append(pid)
    counts = Counter(p.spec.category for p in problems.values())
    cov.per_category = {c: counts.get(c, 0) for c in CATEGORIES}
    return cov


def rows(cov: Coverage) -> list[dict[str, str]]:
    """One row per upstream id: its name, the native problems covering it (and those that
    resemble it, as partial)."""
    out = []
    for i in range(1, UPSTREAM_COUNT + 1):
        by = ", ".join(cov.covered_by.get(i, [])) or "MISSING"
        part = cov.partial.get(i)
        out.append({"id": str(i), "upstream": UPSTREAM_NAMES.get(i, "?"),
                    "covered by": by + (f" (partial: {', '.join(part)})" if part else "")})
    return out


def summary(cov: Coverage) -> list[str]:
    """The totals under the table: covered, missing, per category, short categories."""
    missing = cov.missing
    short = cov.short_categories
    return [
        f"covered: {UPSTREAM_COUNT - len(missing)}/{UPSTREAM_COUNT} upstream problems; "
        f"{len(missing)} missing: {', '.join(map(str, missing)) or 'none'}",
        f"native problems: {cov.total}",
        "per category (need >= %d): " % MIN_PER_CATEGORY + ", ".join(f"{c} {n}" for c, n in cov.per_category.items()),
        "short: " + (", ".join(f"{c} ({n}, needs {MIN_PER_CATEGORY - n} more)" for c, n in short.items()) or "none"),
    ]
