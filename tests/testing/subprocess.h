// Tests use the project's child-process helper (tools/subprocess.h) under this name.
#pragma once

#include "muster/tools/subprocess.h"

namespace muster::testing {
using ::muster::Subprocess;
}  // namespace muster::testing
