# Device call 10 (nvidia-h100-x1), ninth session, harness 0.4.11: which part of the next
# evaluation's sandboxes disturbs this one's timing (call 9): their import, or their ranks'
# device set-up? Three trees alternated on one machine, the launch-bound references of call 9
# against themselves: `early` (this tree: spares start with the evaluation), `goafter` (this
# tree + go_after.patch: spares import with the evaluation, their ranks fork and set up only
# once the evaluation ended or the spare is taken), `late` (node.py's overlap off: spares
# start after the evaluation). Every evaluation's samples dumped.
set -o pipefail
source scripts/device_runs/setup_gpu_machine.sh
python3 scripts/device_runs/session7_2026-11-26/dump_samples.py
IDS=allreduce,broadcast,gemm_allreduce,allgather,alltoall,reduce_scatter,gated_deltanet_ulysses,kimi_delta_attention_cp_tp
for v in goafter late; do mkdir -p /tmp/$v && cp -r pkb_ray problems scripts conf pyproject.toml sweep.py /tmp/$v/; done
(cd /tmp/goafter && patch -p1 -s < scripts/device_runs/session9_2026-11-26/go_after.patch && grep -c '"go"' pkb_ray/engine/node.py)
sed -i 's/^        overlap = self.spec.device != "cpu"$/        overlap = False/' /tmp/late/pkb_ray/engine/node.py
run() {  # tree tag
  local t0=$(date +%s)
  (cd $1 && PYTHONPATH=/tmp/site:$1 PKB_SAMPLES_DUMP=$OUT/samples_$2.jsonl timeout 100 python3 scripts/self_timing.py --device cuda \
    --world-size 1 --evals 1 --trials 2 --ids $IDS --out /tmp/st_$2 --tag _$2 2>&1 | grep -E "^[a-z_]+ #0: " | cut -c1-60 | tr '\n' ' ')
  python3 -c "import json; d=json.load(open('/tmp/st_$2/self_timing_cuda_$2.json')); print('ns', round(sum(e.get('node_seconds') or 0 for r in d['rows'] for e in r.get('evals',[])),1))"
  echo "$2: $(( $(date +%s) - t0 )) s"
}
for i in 1 2; do
  run $PWD early_$i
  run /tmp/goafter goafter_$i
  run /tmp/late late_$i
done
