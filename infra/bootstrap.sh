#!/usr/bin/env bash
# Makes a fresh Debian 12 machine able to run the iopipe stack:
#   1. Debian packages (docker, debootstrap, sysstat and fio as peers, libfuse3 for the fault
#      disk, clang and bpftool to build the agent's BPF programs),
#   2. a running dockerd,
#   3. the `debian:bookworm` base image every Dockerfile starts FROM.
# Where no image registry answers, the base image is built with debootstrap and
# imported under that tag. Every step is skipped when already done.
set -euo pipefail

say() { printf '[bootstrap] %s\n' "$*" >&2; }

APT_PACKAGES=(docker.io docker-compose python3-yaml debootstrap sysstat fio util-linux fuse3 libfuse3-dev pkg-config gcc clang bpftool libelf-dev zlib1g-dev libssl-dev openssl)

install_packages() {
  local missing=()
  for pkg in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return
  say "installing Debian packages: ${missing[*]} (about a minute)"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
}

start_dockerd() {
  if docker info >/dev/null 2>&1; then return; fi
  say "starting dockerd (log: /var/log/iopipe-dockerd.log)"
  # dockerd outlives this script: it must not inherit its caller's descriptors beyond
  # stdio (a lock held by `flock ... make`, the pipe of `make test | tee`), or it holds
  # them for as long as it runs.
  (
    for fd in /proc/$BASHPID/fd/*; do
      fd=${fd##*/}
      [ "$fd" -gt 2 ] && eval "exec $fd>&-"
    done
    exec nohup dockerd >/var/log/iopipe-dockerd.log 2>&1 </dev/null
  ) &
  for _ in $(seq 1 60); do
    docker info >/dev/null 2>&1 && return
    sleep 1
  done
  say "dockerd did not answer within 60 s; see /var/log/iopipe-dockerd.log"
  exit 1
}

build_base_image() {
  if docker image inspect debian:bookworm >/dev/null 2>&1; then return; fi
  say "trying to pull debian:bookworm"
  if timeout 20 docker pull -q debian:bookworm >/dev/null 2>&1; then return; fi
  local rootfs
  rootfs=$(mktemp -d /var/tmp/iopipe-rootfs.XXXXXX)
  say "no registry answered: building debian:bookworm with debootstrap (about a minute)"
  debootstrap --variant=minbase bookworm "$rootfs" http://deb.debian.org/debian >/var/log/iopipe-debootstrap.log 2>&1 \
    || { say "debootstrap failed; see /var/log/iopipe-debootstrap.log"; exit 1; }
  tar -C "$rootfs" -c . | docker import - debian:bookworm >/dev/null
  rm -rf "$rootfs"
  say "debian:bookworm imported"
}

install_packages
start_dockerd
build_base_image
