#!/bin/sh
# Builds the small base image the container tests use (waza-test/busybox:1), offline: a root filesystem of
# the host's static busybox and its applets, given to the engine with `docker import` (no registry involved).
# `bash` is a stand-in that runs busybox's ash, enough for the test tasks' scripts. Does nothing when the
# image is there already. Usage: busybox-image.sh [TAG]   (ENGINE=podman to use podman)
set -eu
engine=${ENGINE:-docker}
tag=${1:-waza-test/busybox:1}
"$engine" image inspect "$tag" >/dev/null 2>&1 && exit 0
busybox=$(command -v busybox || true)
[ -n "$busybox" ] || { echo "busybox-image.sh: no busybox on PATH (Debian: busybox-static)" >&2; exit 1; }
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/bin" "$root/etc" "$root/tmp" "$root/root" "$root/usr/bin"
chmod 1777 "$root/tmp"
cp "$busybox" "$root/bin/busybox"
for applet in $("$busybox" --list); do
  [ "$applet" = busybox ] || ln -s busybox "$root/bin/$applet"
done
printf '#!/bin/sh\nexec /bin/sh "$@"\n' >"$root/bin/bash"
chmod 755 "$root/bin/bash"
printf 'root:x:0:0:root:/root:/bin/sh\n' >"$root/etc/passwd"
printf 'root:x:0:\n' >"$root/etc/group"
tar -C "$root" -c . | "$engine" import -c 'ENV PATH=/usr/local/bin:/usr/bin:/bin' -c 'CMD ["/bin/sh"]' - "$tag" >/dev/null
# A busybox that is not static cannot run in that root: say so rather than leave a broken image.
"$engine" run --rm --network none "$tag" true || { "$engine" rmi "$tag" >/dev/null; echo "busybox-image.sh: $busybox does not run alone (not static?)" >&2; exit 1; }
