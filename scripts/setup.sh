#!/usr/bin/env bash
# Installs what braid needs on a bare Debian machine, builds it, and makes the
# laboratory's virtual environment. Running it again changes nothing.
set -euo pipefail
cd "$(dirname "$0")/.."

apt_packages=(
  clang llvm bpftool libelf-dev zlib1g-dev pkg-config make   # BPF object and libbpf
  iproute2 nftables ethtool util-linux iputils-ping             # testbeds
  iperf3 fping                                                  # reference peers and probes
  rsync netcat-openbsd                                          # the small-files benchmark's peers
  globus-gridftp-server-progs globus-gass-copy-progs            # GridFTP, beside braid on a WAN path
  xrootd-server xrootd-client                                   # XRootD, likewise
  openssh-client openssh-server                                 # starting a far end over ssh (tests: sshd)
)
missing=()
for p in "${apt_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

command -v cargo >/dev/null || { echo "setup: cargo not found; install Rust (rustup) first" >&2; exit 1; }
cargo build --release --workspace --locked

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check -e 'python[test]'
echo "setup: done (braid at target/release/braid, laboratory in .venv)"
