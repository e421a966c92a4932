#!/usr/bin/env bash
# Builds the libraries whose code hands data between threads, in the versions this machine has
# installed, instrumented with ThreadSanitizer, into cached prefixes outside the tree, and prints
# them as one CMAKE_PREFIX_PATH. A second run with the prefixes in place does nothing.
#
#   tools/sanitizers/build-deps.sh thread|address
#
# ThreadSanitizer cannot see synchronisation inside code it did not instrument: against Debian's
# libcaf every message handed between threads through a mailbox, and against Debian's abseil
# every absl::Mutex and absl::Notification shared by two threads, would be reported as a race.
# `thread` therefore builds CAF (libcaf-dev) and abseil (libabsl-dev). AddressSanitizer needs
# neither (it checks the memory our code touches wherever it was allocated): `address` builds
# nothing and prints nothing.
#
# The sources are Debian's own: `apt-get source` of the installed versions (a deb-src line is
# added to the Debian sources when there is none). Nothing is downloaded from elsewhere.
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

fail() { echo "build-deps: $*" >&2; exit 1; }

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"
  elif command -v sudo >/dev/null; then sudo "$@"
  else fail "needs root (or sudo) to run: $*"
  fi
}

# The source version of the installed binary package $1 (e.g. 0.17.6-2.1).
installed() {
  dpkg-query -W -f='${source:Version}' "$1" 2>/dev/null ||
    fail "$1 is not installed (run tools/install-deps.sh)"
}

# Lets apt-get fetch sources: a deb-src type for Debian's deb822 entry, or deb-src lines for a
# one-line sources.list.
enable_sources() {
  if apt-get indextargets --format '$(CREATED_BY)' 2>/dev/null | grep -q '^Sources$'; then
    return
  fi
  local deb822=/etc/apt/sources.list.d/debian.sources list=/etc/apt/sources.list
  echo "build-deps: enabling Debian's source packages (deb-src) for apt-get source" >&2
  if [ -f "$deb822" ]; then
    as_root sed -i 's/^Types: deb$/Types: deb deb-src/' "$deb822"
  elif [ -f "$list" ]; then
    as_root sed -i -e '/^deb /{p;s/^deb /deb-src /}' "$list"
  fi
  as_root apt-get update -qq >&2
}

# Whether $SRC holds the .dsc of source package $1 at version $2 and its upstream tarball.
fetched() {
  [ -f "$SRC/${1}_$2.dsc" ] && ls "$SRC/${1}_${2%-*}".orig.tar.* >/dev/null 2>&1
}

# Downloads source package $1 at version $2 into $SRC; its .dsc path on stdout.
fetch() {
  local package=$1 version=$2
  local dsc="$SRC/${package}_${version}.dsc"
  if ! fetched "$package" "$version"; then
    enable_sources
    # Some versions' .debian.tar.xz are missing from the mirror: apt-get then fails after the
    # .dsc and the upstream tarball arrived, which is checked below.
    (cd "$SRC" && apt-get source --download-only "$package=$version" >&2) || true
  fi
  if ! fetched "$package" "$version"; then
    rm -f "$dsc"
    fail "apt-get source did not fetch $package $version (are Debian's deb-src entries enabled?)"
  fi
  echo "$dsc"
}

# Configures, builds and installs the CMake project in $1 into $2 (build dir $3) with the
# sanitizer; the remaining arguments go to cmake.
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

# CAF (libcaf-dev). The mirror lacks 0.17.6-2.1's .debian.tar.xz: the upstream tarball is
# enough, checked against the .dsc's SHA-256. Debian's patches add the #include <limits> that
# g++ 12 needs in libcaf_io; `-include limits` does the same without editing the source.
version=$(installed libcaf-dev)
CAF="$CACHE/caf-$version-$SANITIZER"
if [ ! -f "$CAF/.complete" ]; then
  dsc=$(fetch actor-framework "$version")
  upstream=${version%-*}
  tarball="$SRC/actor-framework_$upstream.orig.tar.gz"
  want=$(awk '/^Checksums-Sha256:/{on=1;next} /^[^ ]/{on=0} on && $3 ~ /orig.tar.gz$/ {print $1}' \
    "$dsc")
  got=$(sha256sum "$tarball" | cut -d' ' -f1)
  if [ -z "$want" ] || [ "$want" != "$got" ]; then
    rm -f "$tarball" "$dsc"
    fail "$tarball does not match its .dsc (sha256 $got, want $want)"
  fi
  work="$CACHE/build-caf-$SANITIZER"
  rm -rf "$work" && mkdir -p "$work" && tar xzf "$tarball" -C "$work"
  echo "build-deps: building CAF $version with $FLAGS into $CAF (about 3 minutes on 2 cores)" >&2
  build "$work/actor-framework-$upstream" "$CAF" "$work/build" \
    -DCMAKE_CXX_FLAGS="$FLAGS -fno-omit-frame-pointer -include limits" \
    -DCAF_LOG_LEVEL=QUIET -DCAF_NO_EXAMPLES=yes -DCAF_NO_UNIT_TESTS=yes -DCAF_NO_TOOLS=yes \
    -DCAF_NO_PYTHON=yes -DCAF_NO_OPENCL=yes -DCAF_NO_BENCHMARKS=yes -DCAF_NO_SUMMARY=yes
  rm -rf "$work"
fi

# abseil (libabsl-dev), with Debian's patches: dpkg-source checks the files against the .dsc and
# applies them, so options, inline namespace and sonames are Debian's.
version=$(installed libabsl-dev)
ABSL="$CACHE/abseil-$version-$SANITIZER"
if [ ! -f "$ABSL/.complete" ]; then
  dsc=$(fetch abseil "$version")
  work="$CACHE/build-abseil-$SANITIZER"
  rm -rf "$work" && mkdir -p "$work"
  dpkg-source -x "$dsc" "$work/abseil" >&2
  echo "build-deps: building abseil $version with $FLAGS into $ABSL (about 1 minute)" >&2
  build "$work/abseil" "$ABSL" "$work/build" \
    -DCMAKE_CXX_FLAGS="$FLAGS -fno-omit-frame-pointer" -DCMAKE_CXX_STANDARD=17 \
    -DBUILD_SHARED_LIBS=ON -DBUILD_TESTING=OFF -DABSL_PROPAGATE_CXX_STD=ON
  rm -rf "$work"
fi

echo "$CAF;$ABSL"
