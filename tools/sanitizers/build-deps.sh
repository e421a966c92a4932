#!/usr/bin/env bash
# Builds the libraries whose code hands data between threads, in the versions Debian 12 installs,
# instrumented with a sanitizer, into cached prefixes outside the tree, and prints them as one
# CMAKE_PREFIX_PATH. A second run with the prefixes in place does nothing.
#
#   tools/sanitizers/build-deps.sh thread|address
#
# ThreadSanitizer cannot see synchronisation inside code it did not instrument: against Debian's
# libcaf every message handed between threads through a mailbox, and against Debian's abseil
# every absl::Mutex, absl::Notification and absl::Status shared by two threads, would be
# reported as a race. `thread` therefore builds CAF 0.17.6 and abseil 20220623.1. AddressSanitizer
# needs neither (it checks the memory our code touches wherever it was allocated): `address`
# builds nothing and prints nothing.
#
# The sources are Debian's own: `apt-get source` of the installed versions (a deb-src type is
# added to the Debian source entry when it is missing). Nothing is downloaded from elsewhere.
set -euo pipefail

SANITIZER=${1:-}
case "$SANITIZER" in
  thread) FLAGS="-fsanitize=thread" ;;
  address) exit 0 ;;
  *) echo "usage: $0 thread|address" >&2; exit 2 ;;
esac
CACHE=${MUSTER_SANITIZER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/muster}
SRC="$CACHE/src"
mkdir -p "$SRC"
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi

# Downloads the source package PACKAGE=VERSION into $SRC (enabling deb-src once).
fetch() {
  local package=$1 version=$2
  if [ -f "$SRC/${package}_$version.dsc" ]; then return; fi
  local sources=/etc/apt/sources.list.d/debian.sources
  if [ -f "$sources" ] && ! grep -q '^Types:.*deb-src' "$sources"; then
    echo "build-deps: adding the deb-src type to $sources" >&2
    $SUDO sed -i 's/^Types: deb$/Types: deb deb-src/' "$sources"
    $SUDO apt-get update -qq >&2
  fi
  (cd "$SRC" && apt-get source --download-only "$package=$version" >&2) || true
  if [ ! -f "$SRC/${package}_$version.dsc" ]; then
    echo "build-deps: apt-get source did not fetch $package $version (is deb-src enabled?)" >&2
    exit 1
  fi
}

# Configures, builds and installs the CMake project in $1 into $2 with the sanitizer.
build() {
  local source=$1 prefix=$2 build=$3
  shift 3
  cmake -S "$source" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_INSTALL_PREFIX="$prefix" -DCMAKE_INSTALL_RPATH="$prefix/lib" \
    -DCMAKE_SHARED_LINKER_FLAGS="$FLAGS" -DCMAKE_EXE_LINKER_FLAGS="$FLAGS" "$@" >&2
  cmake --build "$build" -j "${JOBS:-2}" >&2
  cmake --install "$build" >&2
  touch "$prefix/.complete"
}

# CAF 0.17.6 (libcaf-dev). The mirror lacks this version's .debian.tar.xz: the upstream tarball
# is enough, checked against the .dsc's SHA-256. Debian's patches add the #include <limits>
# that g++ 12 needs in libcaf_io; `-include limits` does the same without editing the source.
CAF="$CACHE/caf-0.17.6-$SANITIZER"
if [ ! -f "$CAF/.complete" ]; then
  fetch actor-framework 0.17.6-2.1
  tarball="$SRC/actor-framework_0.17.6.orig.tar.gz"
  want=$(awk '/^Checksums-Sha256:/{on=1;next} /^[^ ]/{on=0} on && $3 ~ /orig.tar.gz$/ {print $1}' \
    "$SRC/actor-framework_0.17.6-2.1.dsc")
  got=$(sha256sum "$tarball" | cut -d' ' -f1)
  if [ -z "$want" ] || [ "$want" != "$got" ]; then
    rm -f "$tarball" "$SRC/actor-framework_0.17.6-2.1.dsc"
    echo "build-deps: $tarball does not match its .dsc (sha256 $got, want $want)" >&2
    exit 1
  fi
  work="$CACHE/build-caf-$SANITIZER"
  rm -rf "$work" && mkdir -p "$work" && tar xzf "$tarball" -C "$work"
  echo "build-deps: building CAF 0.17.6 with $FLAGS into $CAF (about 3 minutes on 2 cores)" >&2
  build "$work/actor-framework-0.17.6" "$CAF" "$work/build" \
    -DCMAKE_CXX_FLAGS="$FLAGS -fno-omit-frame-pointer -include limits" \
    -DCAF_LOG_LEVEL=QUIET -DCAF_NO_EXAMPLES=yes -DCAF_NO_UNIT_TESTS=yes -DCAF_NO_TOOLS=yes \
    -DCAF_NO_PYTHON=yes -DCAF_NO_OPENCL=yes -DCAF_NO_BENCHMARKS=yes -DCAF_NO_SUMMARY=yes
  rm -rf "$work"
fi

# abseil 20220623.1 (libabsl-dev), with Debian's patches (dpkg-source checks the .dsc's
# checksums and applies them): the same options, inline namespace and sonames as Debian's.
ABSL="$CACHE/abseil-20220623.1-$SANITIZER"
if [ ! -f "$ABSL/.complete" ]; then
  fetch abseil 20220623.1-1+deb12u2
  work="$CACHE/build-abseil-$SANITIZER"
  rm -rf "$work" && mkdir -p "$work"
  dpkg-source --no-check -x "$SRC/abseil_20220623.1-1+deb12u2.dsc" "$work/abseil" >&2
  echo "build-deps: building abseil 20220623.1 with $FLAGS into $ABSL (about 6 minutes on 2 cores)" >&2
  build "$work/abseil" "$ABSL" "$work/build" \
    -DCMAKE_CXX_FLAGS="$FLAGS -fno-omit-frame-pointer" -DCMAKE_CXX_STANDARD=17 \
    -DBUILD_SHARED_LIBS=ON -DBUILD_TESTING=OFF -DABSL_PROPAGATE_CXX_STD=ON
  rm -rf "$work"
fi

echo "$CAF;$ABSL"
