#!/usr/bin/env bash
# install-deps.sh: install the Debian packages this project builds, tests and
# benchmarks with. Idempotent and non-interactive: packages already installed
# are skipped, and a busy dpkg lock is waited on rather than failed.
set -euo pipefail

PKGS=(
  build-essential pkg-config
  libuv1-dev libnng-dev libmsgpack-dev libyaml-dev check
  libopenblas-dev libdnnl-dev zlib1g-dev libsystemd-dev
  systemd-container debootstrap
  python3-numpy python3-yaml cppcheck
  libmicrohttpd-dev prometheus curl
  libssl-dev openssl
  dataset-fashion-mnist
  slurmctld slurmd slurm-client munge
)
# Optional extras: installed with INSTALL_EXTRAS=1 (the PyTorch reference of
# make bench-train and the accuracy comparison; large, so not for make check).
if [ "${INSTALL_EXTRAS:-0}" = 1 ]; then
  PKGS+=(python3-torch)
fi

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PKGS[@]} packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
SUDO=
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
export DEBIAN_FRONTEND=noninteractive
APT=($SUDO apt-get -y -q -o DPkg::Lock::Timeout=600)
"${APT[@]}" update
"${APT[@]}" install --no-install-recommends "${missing[@]}"
