// Tests use the project's child-process helper (tools/run/subprocess.h) under this name.
#pragma once

#include "muster/tools/run/subprocess.h"

namespace muster::testing {
using ::muster::Subprocess;
}  // namespace muster::testing
