# Set-up of a bare GPU machine for the engine; source it from the repository root:
#   source scripts/device/setup_gpu_machine.sh
# Needs, carried along: a site pack and .devtools/bubblewrap_*.deb (`cd .devtools && apt-get
# download bubblewrap`): the GPU image has neither, nor a network to fetch them. The site
# pack is SITE_PACK if set, else the first there of .devsite_sweep/sweep-py312.txz
# (scripts/device/pack_sweep_site.sh: Ray Core, Hydra, MLflow, litellm) and
# .devsite/site-py312.tgz (../shared/device/pack-site.sh: Ray and the config libraries).
# Makes the sandbox's user, puts the unpacked bwrap first on PATH and pkb_ray (this checkout)
# and the site on PYTHONPATH, and keeps NVLink multicast off in every process started from here.
if [ -z "${SITE_PACK:-}" ]; then
  for SITE_PACK in .devsite_sweep/sweep-py312.txz .devsite/site-py312.tgz; do [ -f "$SITE_PACK" ] && break; done
fi
# One folder per pack: two packs unpacked over each other would mix versions.
SITE_DIR=/tmp/site_$(basename "$SITE_PACK" | tr -c 'a-zA-Z0-9\n' _)
mkdir -p "$SITE_DIR" /tmp/bw
[ -f "$SITE_DIR/.unpacked" ] || { tar xf "$SITE_PACK" -C "$SITE_DIR" && touch "$SITE_DIR/.unpacked"; }
for f in .devtools/bubblewrap_*.deb; do dpkg -x "$f" /tmp/bw; done
export PATH=/tmp/bw/usr/bin:$PATH
id pkb-sandbox >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin pkb-sandbox
export PYTHONPATH=$SITE_DIR:$PWD PYTHONUNBUFFERED=1
# litellm reads its price table from the pack, not the network (there is none there).
export LITELLM_LOCAL_MODEL_COST_MAP=True RAY_USAGE_STATS_ENABLED=0
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
