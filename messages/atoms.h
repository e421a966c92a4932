// Atoms for Muster's internal, non-protobuf messages (timers and control).
#pragma once

#include <caf/atom.hpp>

namespace muster {

using retry_atom = caf::atom_constant<caf::atom("retry")>;
using deadline_atom = caf::atom_constant<caf::atom("deadline")>;
// Withdraws the sender's pending request on a key (e.g. a blocked GetKeyValue).
using cancel_atom = caf::atom_constant<caf::atom("cancel")>;

}  // namespace muster
