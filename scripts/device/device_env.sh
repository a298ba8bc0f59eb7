# Sourced by the device scripts from the repository root, with DEVICE set (cuda | cpu):
#   source scripts/device/device_env.sh NAME "ray, mlflow, torch" || exit 2
# cuda: the GPU machine's set-up (setup_gpu_machine.sh: the packs, bubblewrap, the sandbox's
# user) and the GPUs it sees; cpu: this machine's packages (the scripts' plumbing checks).
# Then the modules NAME needs must import, else it says which pack to carry and returns 2.
if [ "$DEVICE" = cuda ]; then
  source scripts/device/setup_gpu_machine.sh
  nvidia-smi --query-gpu=index,name,memory.used --format=csv,noheader
else
  export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} LITELLM_LOCAL_MODEL_COST_MAP=True
fi
python3 -c "import $2" || { echo "$1: the packs are not importable (carry .devsite_sweep)"; return 2; }
