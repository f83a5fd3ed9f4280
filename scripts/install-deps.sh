#!/usr/bin/env bash
# Installs what zklock's build, demo and tests need on a Debian machine:
# ZooKeeper 3.8 (Debian package `zookeeper`, which brings Java) and checks
# for the Rust toolchain. Safe to run again: it installs only what is missing.
set -euo pipefail

need_apt=()
[ -f /usr/share/java/zookeeper.jar ] || need_apt+=(zookeeper)
command -v java >/dev/null 2>&1 || need_apt+=(default-jre-headless)
command -v cc >/dev/null 2>&1 || need_apt+=(build-essential)

if [ ${#need_apt[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "install-deps: installing ${need_apt[*]} with apt-get"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}"
fi

if ! command -v cargo >/dev/null 2>&1; then
  echo "install-deps: cargo not found; install Rust >= 1.89 (https://rustup.rs) and run again" >&2
  exit 1
fi
echo "install-deps: zookeeper $(dpkg-query -W -f='${Version}' zookeeper 2>/dev/null || echo '(not from apt)'); $(java -version 2>&1 | head -1); $(cargo --version)"
