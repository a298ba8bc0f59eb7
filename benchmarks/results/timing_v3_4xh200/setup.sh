# Set-up of a bare GPU machine for the engine (source it from the repository root, in a
# `run` that carries .devsite and .devtools): Ray and the config libraries packed by
# ../shared/device/pack-site.sh (.devsite/site-py312.tgz), bubblewrap unpacked from Debian's
# package (`cd .devtools && apt-get download bubblewrap`), and the sandbox's user.
mkdir -p /tmp/site /tmp/bw
tar xzf .devsite_slim/site-py312.tgz -C /tmp/site
for f in .devtools/bubblewrap_*.deb; do dpkg -x "$f" /tmp/bw; done
export PATH=/tmp/bw/usr/bin:$PATH
id pkb-sandbox >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin pkb-sandbox
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
