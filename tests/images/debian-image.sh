#!/bin/sh
# Builds a small Debian 12 image offline from the registries' side (Debian's package mirror only): a minimal root
# with PACKAGES made by mmdebstrap, given to the engine with `docker import`. debian-pip-image.sh (python3-pip:
# about 2.5 min and 240 MB on a busy 2-core machine) and debian-node-image.sh (nodejs and npm: about 9 min and
# 390 MB) call it; the tests that need such an image skip, saying why, without it.
# Does nothing when the image is there already. Usage: debian-image.sh TAG PACKAGES   (ENGINE=podman to use podman)
set -eu
engine=${ENGINE:-docker}
tag=$1
"$engine" image inspect "$tag" >/dev/null 2>&1 && exit 0
command -v mmdebstrap >/dev/null 2>&1 || { echo "debian-image.sh: no mmdebstrap" >&2; exit 1; }
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
mmdebstrap --quiet --variant=apt --include="$2" bookworm "$root/root.tar"
"$engine" import -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' "$root/root.tar" "$tag" >/dev/null
