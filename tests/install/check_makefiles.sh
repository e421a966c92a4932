#!/usr/bin/env bash
# Configures the project with CMake's default generator (Unix Makefiles) in a temporary folder
# and builds the generated protos and the tools' report proto, the steps that need protoc's
# output folders to exist.
set -euo pipefail
source_dir=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake -S "$source_dir" -B "$work" -G "Unix Makefiles" -DCMAKE_BUILD_TYPE=Release \
  -DMUSTER_BUILD_TESTS=OFF -DMUSTER_BUILD_EXAMPLES=OFF -DMUSTER_BUILD_BENCH=OFF >/dev/null
cmake --build "$work" --target muster_proto -j 2 >/dev/null
test -f "$work/gen/muster/proto/coordination_service.pb.h"
# Only the generation step of the tools' proto (its rule in the muster_cli target's makefile).
(cd "$work" && make -s -f tools/CMakeFiles/muster_cli.dir/build.make \
  gen/muster/tools/job/status_report.pb.h >/dev/null)
test -f "$work/gen/muster/tools/job/status_report.pb.h"
echo "makefiles ok"
