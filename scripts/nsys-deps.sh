#!/bin/bash
# Put Debian's libdw1 and libelf1 (needed by the GPU machine's Nsight Systems importer) into DIR.
# Usage: scripts/nsys-deps.sh DIR   (on a machine with Debian's apt; then carry DIR to the GPU machine,
#        where scripts/profile.sh --nsys-deps DIR uses it)
set -euo pipefail
dir=${1:?usage: nsys-deps.sh DIR}
mkdir -p "$dir/.debs"
(cd "$dir/.debs" && apt-get download libdw1 libelf1 >/dev/null 2>&1 || { apt-get update >/dev/null && apt-get download libdw1 libelf1; })
for f in "$dir"/.debs/*.deb; do dpkg -x "$f" "$dir"; done
rm -rf "$dir/.debs"
echo "LD_LIBRARY_PATH addition: $dir/usr/lib/x86_64-linux-gnu"
