#!/usr/bin/env bash
# Runs the README's two commands on a fresh Debian 12: a minimal root file system made by
# debootstrap (nothing but Debian's "required" packages), this repository's committed HEAD cloned
# into it, then `scripts/test.sh` and `scripts/demo.sh` inside it with chroot. A package the
# scripts forget to install, or a file the tests read from the developer's machine, fails here
# rather than on the next new machine.
#   scripts/fresh-debian.sh [ROOT]     as root; ROOT defaults to /var/tmp/rnnc-fresh-debian
# Installs debootstrap on the host if missing. The root is made once and kept (delete it for a
# clean start: the second run finds the packages the first one installed); the clone is made
# anew each run. The host's CA certificates and npm configuration are copied in, so a machine
# whose HTTPS goes through an intercepting proxy reaches the npm registry from the root as it does
# from the host. Takes 30-40 minutes on 2 cores the first time (packages, a cold build, cold
# kernel compiles).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
root=${1:-/var/tmp/rnnc-fresh-debian}
step() { echo "== fresh-debian.sh: $*" >&2; }

if [[ $(id -u) -ne 0 ]]; then
  echo "fresh-debian.sh: run as root (debootstrap, mount and chroot need it)" >&2
  exit 1
fi
if ! command -v debootstrap >/dev/null 2>&1; then
  step "installing debootstrap"
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends debootstrap >/dev/null
fi
if [[ ! -x "$root/usr/bin/apt-get" ]]; then
  step "debootstrap --variant=minbase bookworm $root"
  debootstrap --variant=minbase bookworm "$root" http://deb.debian.org/debian >/dev/null
fi

step "network and certificates from the host"
cp /etc/resolv.conf "$root/etc/resolv.conf"
if [[ -f /etc/apt/sources.list.d/debian.sources ]]; then
  cp /etc/apt/sources.list.d/debian.sources "$root/etc/apt/sources.list.d/debian.sources"
  rm -f "$root/etc/apt/sources.list"
fi
mkdir -p "$root/usr/local/share/ca-certificates" "$root/etc/ssl/certs"
if [[ -d /usr/local/share/ca-certificates ]]; then
  cp -r /usr/local/share/ca-certificates/. "$root/usr/local/share/ca-certificates/"
fi
if [[ -f /etc/ssl/certs/ca-certificates.crt ]]; then
  cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
fi
for npmrc in /etc/npmrc /root/.npmrc; do
  if [[ -f $npmrc ]]; then cp "$npmrc" "$root$npmrc"; fi
done

mounted=()
cleanup() {
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount "${mounted[i]}" || true; done
}
trap cleanup EXIT
for dir in proc sys dev dev/pts; do
  if ! mountpoint -q "$root/$dir"; then
    mount --bind "/$dir" "$root/$dir"
    mounted+=("$root/$dir")
  fi
done

step "cloning $(git -C "$repo" rev-parse --short HEAD) into $root/root/rnnc"
rm -rf "$root/root/rnnc"
git clone -q "$repo" "$root/root/rnnc"

in_root() {
  chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin TERM=dumb \
    /bin/bash -c "cd /root/rnnc && $1"
}
step "scripts/test.sh"
in_root "bash scripts/test.sh"
step "scripts/demo.sh"
in_root "bash scripts/demo.sh"
step "both README commands passed in the fresh root"
