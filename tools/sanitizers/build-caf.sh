#!/usr/bin/env bash
# Builds CAF 0.17.6, the version Debian 12 installs (libcaf-dev), instrumented with a sanitizer,
# into a cached prefix outside the tree, and prints that prefix. A second run with the prefix in
# place does nothing. `make tsan` and `make asan` build Muster against it: Debian's libcaf is
# not instrumented, so ThreadSanitizer cannot see the synchronisation inside CAF's mailboxes
# and reports every message handed between threads as a race.
#
#   tools/sanitizers/build-caf.sh thread|address
#
# The source is Debian's own: `apt-get source` of the installed version (a deb-src type is added
# to the Debian source entry when it is missing). Debian's mirror lacks this version's
# .debian.tar.xz; the upstream tarball the .dsc names is enough, and its SHA-256 is checked
# against the .dsc. Nothing is downloaded from anywhere else.
set -euo pipefail

SANITIZER=${1:-}
case "$SANITIZER" in
  thread) FLAGS="-fsanitize=thread" ;;
  address) FLAGS="-fsanitize=address,undefined" ;;
  *) echo "usage: $0 thread|address" >&2; exit 2 ;;
esac
VERSION=0.17.6
CACHE=${MUSTER_SANITIZER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/muster}
PREFIX="$CACHE/caf-$VERSION-$SANITIZER"
if [ -f "$PREFIX/.complete" ]; then echo "$PREFIX"; exit 0; fi

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
SRC="$CACHE/src"
mkdir -p "$SRC"
TARBALL="$SRC/actor-framework_$VERSION.orig.tar.gz"
if [ ! -f "$TARBALL" ]; then
  SOURCES=/etc/apt/sources.list.d/debian.sources
  if [ -f "$SOURCES" ] && ! grep -q '^Types:.*deb-src' "$SOURCES"; then
    echo "build-caf: adding the deb-src type to $SOURCES" >&2
    $SUDO sed -i 's/^Types: deb$/Types: deb deb-src/' "$SOURCES"
    $SUDO apt-get update -qq >&2
  fi
  # The .debian.tar.xz of this version is missing from the mirror: apt-get fails after the
  # .dsc and the upstream tarball arrived.
  (cd "$SRC" && apt-get source --download-only "actor-framework=$VERSION-2.1" >&2) || true
  DSC="$SRC/actor-framework_$VERSION-2.1.dsc"
  if [ ! -f "$DSC" ] || [ ! -f "$TARBALL" ]; then
    echo "build-caf: apt-get source did not fetch actor-framework $VERSION (is deb-src enabled?)" >&2
    exit 1
  fi
  WANT=$(awk '/^Checksums-Sha256:/{on=1;next} /^[^ ]/{on=0} on && $3 ~ /orig.tar.gz$/ {print $1}' "$DSC")
  GOT=$(sha256sum "$TARBALL" | cut -d' ' -f1)
  if [ -z "$WANT" ] || [ "$WANT" != "$GOT" ]; then
    rm -f "$TARBALL"
    echo "build-caf: $TARBALL does not match its .dsc (sha256 $GOT, want $WANT)" >&2
    exit 1
  fi
fi

# Debian's patches, which the missing .debian.tar.xz carries, add the #include <limits> that
# g++ 12 needs in libcaf_io (receive_buffer.hpp uses std::numeric_limits); `-include limits`
# does the same without editing the source.
WORK="$CACHE/build-caf-$SANITIZER"
rm -rf "$WORK"
mkdir -p "$WORK"
tar xzf "$TARBALL" -C "$WORK"
echo "build-caf: building CAF $VERSION with $FLAGS into $PREFIX (2-3 minutes on 2 cores)" >&2
cmake -S "$WORK/actor-framework-$VERSION" -B "$WORK/build" -G Ninja \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX="$PREFIX" \
  -DCMAKE_CXX_FLAGS="$FLAGS -fno-omit-frame-pointer -include limits" \
  -DCMAKE_SHARED_LINKER_FLAGS="$FLAGS" -DCMAKE_EXE_LINKER_FLAGS="$FLAGS" \
  -DCAF_LOG_LEVEL=QUIET -DCAF_NO_EXAMPLES=yes -DCAF_NO_UNIT_TESTS=yes -DCAF_NO_TOOLS=yes \
  -DCAF_NO_PYTHON=yes -DCAF_NO_OPENCL=yes -DCAF_NO_BENCHMARKS=yes -DCAF_NO_SUMMARY=yes >&2
cmake --build "$WORK/build" -j "${JOBS:-2}" >&2
cmake --install "$WORK/build" >&2
touch "$PREFIX/.complete"
rm -rf "$WORK"
echo "$PREFIX"
