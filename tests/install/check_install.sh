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
fi
echo "install ok"
