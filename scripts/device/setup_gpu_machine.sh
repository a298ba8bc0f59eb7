# Set-up of a bare GPU machine for the engine; source it from the repository root:
#   source scripts/device/setup_gpu_machine.sh
# Needs, carried along: .devsite/site-py312.tgz (Ray and the config libraries, packed by
# ../shared/device/pack-site.sh) and .devtools/bubblewrap_*.deb (`cd .devtools && apt-get
# download bubblewrap`): the GPU image has neither, nor a network to fetch them. Makes the
# sandbox's user, puts the unpacked bwrap first on PATH and pkb_ray (this checkout) and the
# site on PYTHONPATH, and keeps NVLink multicast off in every process started from here.
mkdir -p /tmp/site /tmp/bw
[ -f /tmp/site/.unpacked ] || { tar xzf .devsite/site-py312.tgz -C /tmp/site && touch /tmp/site/.unpacked; }
for f in .devtools/bubblewrap_*.deb; do dpkg -x "$f" /tmp/bw; done
export PATH=/tmp/bw/usr/bin:$PATH
id pkb-sandbox >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin pkb-sandbox
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
