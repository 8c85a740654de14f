#!/usr/bin/env bash
# `make image`: the container image localhost/platpay:<version> (and :latest) from the wheel, with podman.
#
#   IMAGE_BASE   the base image (python3 3.11+ with venv). Default localhost/platpay-base, which this script
#                makes from Debian packages (mmdebstrap) when it is missing: these machines cannot pull from
#                a container registry. A normal host: IMAGE_BASE=docker.io/library/python:3.12-slim.
#   PODMAN       the container command. Default: podman with runc and cgroupfs, which these machines need;
#                a normal host: PODMAN=podman (or docker).
#   BUILD_NETWORK  podman build's --network (default host: these machines have no container bridge for
#                builds); the build itself reaches no network.
#
# Every wheel (platpay's and its dependencies') is built on the host into build/image/wheels/ and installed
# in the image with `pip install --no-index --find-links`: the build reaches no package index.
set -euo pipefail
cd "$(dirname "$0")/../.."

PYTHON=${PYTHON:-.venv/bin/python}
IMAGE=${IMAGE:-localhost/platpay}
IMAGE_BASE=${IMAGE_BASE:-localhost/platpay-base}
PODMAN=${PODMAN:-podman --runtime runc --cgroup-manager cgroupfs}
BUILD_NETWORK=${BUILD_NETWORK:-host}
export CONTAINERS_CONF=${CONTAINERS_CONF:-$PWD/tools/image/containers.conf}
CONTEXT=build/image

version=$("$PYTHON" -c 'import tomllib; print(tomllib.load(open("pyproject.toml", "rb"))["project"]["version"])')

if [ "$IMAGE_BASE" = localhost/platpay-base ] && ! $PODMAN image exists "$IMAGE_BASE"; then
  echo "image: building $IMAGE_BASE from Debian bookworm packages (mmdebstrap)"
  command -v mmdebstrap >/dev/null || { echo "image: needs mmdebstrap (apt-get install mmdebstrap podman runc)" >&2; exit 1; }
  base_tar=$(mktemp -d)/base.tar
  # minbase + python3 and its venv module; no documentation, manuals or locales; no apt lists.
  mmdebstrap --variant=minbase --include=python3,python3-venv,ca-certificates \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
    --dpkgopt='path-exclude=/usr/share/info/*' \
    --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*' \
    bookworm "$base_tar" http://deb.debian.org/debian
  $PODMAN import "$base_tar" "$IMAGE_BASE"
  rm -rf "$(dirname "$base_tar")"
fi

rm -rf "$CONTEXT"
mkdir -p "$CONTEXT"
"$PYTHON" -m pip wheel --quiet . -w "$CONTEXT/wheels"
rm -rf build/lib build/bdist.* platpay.egg-info  # what the in-tree wheel build leaves
ls "$CONTEXT"/wheels/platpay-"$version"-*.whl >/dev/null

$PODMAN build --format docker --network "$BUILD_NETWORK" --build-arg BASE="$IMAGE_BASE" \
  -f Containerfile -t "$IMAGE:$version" -t "$IMAGE:latest" "$CONTEXT"
echo "image: $IMAGE:$version ($($PODMAN image inspect --format '{{.Size}}' "$IMAGE:$version") bytes)"
