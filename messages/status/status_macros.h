// Early-return helpers for absl::Status, until abseil ships its own.
#pragma once

#include <absl/status/status.h>

// Returns the status of `expr` from the enclosing function when it is not OK.
#define MUSTER_RETURN_IF_ERROR(expr)                                    \
  do {                                                                  \
    if (::absl::Status _muster_status = (expr); !_muster_status.ok()) { \
      return _muster_status;                                            \
    }                                                                   \
  } while (false)
