#!/bin/sh
# Builds waza-test/debian-pip:12, offline from the registries' side (Debian's package mirror only): a minimal
# Debian 12 root with python3-pip made by mmdebstrap, given to the engine with `docker import`. About 2.5 min and
# 240 MB on a busy 2-core machine. The tests that need pip in the container skip, saying why, without it.
# Does nothing when the image is there already. Usage: debian-pip-image.sh [TAG]   (ENGINE=podman to use podman)
set -eu
engine=${ENGINE:-docker}
tag=${1:-waza-test/debian-pip:12}
"$engine" image inspect "$tag" >/dev/null 2>&1 && exit 0
command -v mmdebstrap >/dev/null 2>&1 || { echo "debian-pip-image.sh: no mmdebstrap" >&2; exit 1; }
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
mmdebstrap --quiet --variant=apt --include=python3-pip bookworm "$root/root.tar"
"$engine" import -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' "$root/root.tar" "$tag" >/dev/null
