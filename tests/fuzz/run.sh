#!/usr/bin/env bash
# Builds the fuzz targets with clang (tests/fuzz/CMakeLists.txt) and runs each for
# FUZZ_SECONDS (default 30) from the checked-in corpus in tests/fuzz/corpus/<target>/. New
# interesting inputs go to a scratch folder; copy them into the corpus to keep them.
set -euo pipefail
source_dir=$(cd "$(dirname "$0")" && pwd)
build_dir=${FUZZ_BUILD_DIR:-$source_dir/../../build-fuzz}
seconds=${FUZZ_SECONDS:-30}
cmake -S "$source_dir" -B "$build_dir" -G Ninja -DCMAKE_CXX_COMPILER=clang++ >/dev/null
cmake --build "$build_dir" -j 2
failed=0
for target in frame_guard kv_key status_codec proto_bridge; do
  scratch="$build_dir/new_corpus/$target"
  mkdir -p "$scratch"
  echo "fuzz: $target for ${seconds}s"
  log="$build_dir/$target.log"
  if ! "$build_dir/${target}_fuzz" -max_total_time="$seconds" -print_final_stats=1 \
      -artifact_prefix="$build_dir/$target-" "$scratch" "$source_dir/corpus/$target" \
      >"$log" 2>&1; then
    grep -E "^(==|SUMMARY)|ERROR" "$log" | head -5 >&2
    echo "fuzz: $target FAILED; the input is in $build_dir/$target-crash-*, the log in $log" >&2
    failed=1
    continue
  fi
  grep -E "^Done" "$log" || true
done
[ "$failed" -eq 0 ] && echo "fuzz ok"
exit "$failed"
