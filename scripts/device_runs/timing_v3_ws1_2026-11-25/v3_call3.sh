# Device call 3 (session 4): the reference's load not overlapped; the misses again.
set -o pipefail
source .baseline/setup.sh
R=$PWD
export PYTHONPATH=/tmp/site:$R
t0=$(date +%s)
timeout 170 python3 scripts/bench_eval.py --device cuda --world-size 1 --repeats 5 --out $OUT --tag _ws1_v3c 2>&1 | grep -v "^\[rank" | grep "^|\|max/min" | cut -c1-220 | tail -4
echo "bench: $(( $(date +%s) - t0 )) s"; t2=$(date +%s)
left=$(( 560 - (t2 - t0) ))
timeout $left python3 scripts/self_timing.py --device cuda --world-size 1 --evals 1 --trials 2 --budget-s $((left-40)) --ids tp_rmsnorm_sharded_hidden,vocab_parallel_gemv_decode,ring_attention_backward_dp,spherical_disco_conv,torchrec_kjt_all2all,ulysses_heads_to_seq,vocab_parallel_embedding,moe_combine,grad_norm_clip,moe_lora_grad_allreduce,fft2d_transpose --out $OUT --tag _ws1_misses 2>&1 | grep -v "^\[rank" | grep "#0:" | cut -c1-700
echo "self-timing: $(( $(date +%s) - t2 )) s"
