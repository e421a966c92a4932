// Atoms for Muster's internal, non-protobuf messages (timers and control).
#pragma once

#include <caf/atom.hpp>

namespace muster {

using retry_atom = caf::atom_constant<caf::atom("retry")>;
using deadline_atom = caf::atom_constant<caf::atom("deadline")>;
// A barrier instance finished: (barrier_done_atom, id, counter, result) to its parent.
using barrier_done_atom = caf::atom_constant<caf::atom("barr_done")>;

}  // namespace muster
