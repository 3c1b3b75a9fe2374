#!/usr/bin/env bash
# Installs every Debian package cellgate needs to build, run and test.
# Idempotent; safe to run again. Needs root (or sudo).
set -euo pipefail
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive

BUILD=(build-essential cmake pkg-config git
  libboost-dev libssl-dev libzmq3-dev cppzmq-dev nlohmann-json3-dev libfmt-dev
  libseccomp-dev libcap-dev libsqlite3-dev libpq-dev catch2 prometheus-cpp-dev
  xeus-dev xeus-python-dev libxeus-python0 python3-dev pybind11-dev)
KERNELS=(python3-ipykernel python3-xeus-python-shell python3-numpy python3-scipy python3-pandas python3-matplotlib
  fonts-dejavu-core fontconfig tree
  btrfs-progs)  # mkfs.btrfs: the workspace volume (workspace/volume.h)
# Kernels for other languages, as Debian packages them (they run jailed with the default policy):
# R (IRkernel, with ggplot2) and Octave (octave_kernel, built on metakernel; gnuplot-nox, ghostscript
# and octave's FreeSans font draw its inline plots). Measured on top of the rest: 191 packages, 148 MB to
# fetch, 400 MB on disk, about 100 s to install.
LANG_KERNELS=(r-cran-irkernel r-cran-ggplot2 octave python3-octave-kernel python3-metakernel
  gnuplot-nox ghostscript fonts-freefont-otf)
TESTS=(python3-jupyter-client python3-websocket python3-jupyter-server python3-jupyter-kernel-test
  python3-nbformat python3-requests python3-pytest python3-pip curl openssl acl iproute2 procps
  prometheus chromium postgresql-15 python3-psycopg2
  ruby nodejs)  # with perl, bash, python3, R and octave: the parsers language_literal_test checks literals with

if [ "${CELLGATE_DEPS_SKIP_UPDATE:-0}" != 1 ]; then $SUDO apt-get update -qq; fi
pkgs=("${BUILD[@]}" "${KERNELS[@]}" "${LANG_KERNELS[@]}")
if [ "${1:-}" != "--runtime-only" ]; then pkgs+=("${TESTS[@]}"); fi
$SUDO apt-get install -y -qq --no-install-recommends "${pkgs[@]}"
