#include "muster/actors/observe/events/event_writer_actor.h"

#include <utility>

#include <caf/typed_event_based_actor.hpp>

#include "muster/messages/status/status_codec.h"

namespace muster {
namespace {

EventWriterActor::behavior_type EventWriterBehavior(EventWriterActor::pointer,
                                                    std::shared_ptr<EventFile> file) {
  return {
      [file](event_append_atom, const std::string& lines) -> caf::result<bool> {
        if (absl::Status written = file->Append(lines); !written.ok()) return ToError(written);
        return true;
      },
  };
}

}  // namespace

EventWriterActor SpawnEventWriter(caf::actor_system& system, std::shared_ptr<EventFile> file) {
  return system.spawn<caf::detached>(EventWriterBehavior, std::move(file));
}

}  // namespace muster
