#!/usr/bin/env bash
# Build the base image of Dockerfile.tests locally, with no registry: a minimal Debian bookworm
# (Python 3.11 + venv) made by debootstrap and imported into podman.
# Usage: hack/base-image.sh IMAGE [MIRROR]
set -euo pipefail
image=${1:?usage: base-image.sh IMAGE [MIRROR]}
mirror=${2:-http://deb.debian.org/debian}
if podman image exists "$image"; then
    echo "base image $image already present"
    exit 0
fi
rootfs=$(mktemp -d /var/tmp/nrop-base.XXXXXX)
trap 'rm -rf "$rootfs"' EXIT
echo "debootstrap bookworm into $rootfs (a few minutes)..."
debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates bookworm "$rootfs" "$mirror" >"$rootfs.log" 2>&1 \
    || { tail -20 "$rootfs.log"; exit 1; }
rm -f "$rootfs.log"
rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
echo "importing into podman as $image..."
tar -C "$rootfs" -c . | podman import --change 'CMD ["/bin/bash"]' - "$image" >/dev/null
echo "base image $image ready"
