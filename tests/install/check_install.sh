#!/usr/bin/env bash
# Installs the built library into a temporary prefix, then configures, builds and runs a small
# consumer project against it with find_package(muster), and imports the Python package.
set -euo pipefail
build_dir=$1
source_dir=$2
with_python=${3:-}  # "python": the Python package was built and must install and import
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
cmake -S "$source_dir/tests/install/consumer" -B "$work/build" -G Ninja \
  -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/build" >/dev/null
"$work/build/consumer"
# What was installed, and so the consumer, carries no debug info (unless the build asked for it
# with MUSTER_INSTALL_DEBUG_INFO): a consumer of the static library would be hundreds of MB.
if [ "${MUSTER_INSTALL_DEBUG_INFO:-0}" != 1 ]; then
  installed=$(find "$work/prefix" -type f \
    \( -name 'libmuster.a' -o -name 'muster' -o -name '_muster*.so' \))
  if ! echo "$installed" | grep -q 'libmuster\.a$'; then
    echo "libmuster.a was not installed under $work/prefix" >&2
    exit 1
  fi
  for file in $installed "$work/build/consumer"; do
    if readelf -S -W "$file" | grep -q '\.debug_info'; then
      echo "$file carries debug info ($(du -h "$file" | cut -f1))" >&2
      exit 1
    fi
  done
  echo "installed without debug info: $(echo "$installed" | wc -l) files," \
    "consumer $(du -h "$work/build/consumer" | cut -f1)"
fi
# The Python package, when built, lands in Debian's site directory under the prefix and imports
# from there (not from the build tree).
site=$(echo "$work"/prefix/lib/python3.*/dist-packages)
if [ "$with_python" = python ]; then
  if [ ! -d "$site/muster" ]; then
    echo "the muster Python package was not installed under $work/prefix/lib" >&2
    exit 1
  fi
  (cd "$work" && PYTHONPATH="$site" /usr/bin/python3 -c \
    "import muster, muster.torch; assert muster.__file__.startswith('$site'); print('python ok')")
  # The store in C++, when it was built (with libtorch-dev), installs and loads next to it.
  if compgen -G "$build_dir/python/muster/_muster_torch*.so" >/dev/null; then
    (cd "$work" && PYTHONPATH="$site" /usr/bin/python3 -c \
      "import muster.torch; from muster import _muster_torch as m; \
       assert m.__file__.startswith('$site'); print('native store ok')")
  fi
fi
echo "install ok"
