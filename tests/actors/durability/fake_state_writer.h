// A stand-in for the state writer in deterministic tests: it keeps every batch in a map (the
// "disk") and answers true at once, or holds its answers until the test releases them, or fails
// them with Internal like a writer whose disk write failed.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <absl/status/status.h>
#include <caf/atom.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include "muster/actors/durability/state_writer_actor.h"
#include "muster/messages/status/status_codec.h"

namespace muster::testing {

// Answers the held batches: true, or with `error` when it is set.
using release_atom = caf::atom_constant<caf::atom("release")>;

struct FakeDisk {
  std::map<std::string, std::string> data;  // what the batches put there, deletes applied
  std::vector<StateBatch> batches;          // every batch, in the order received
  bool hold = false;                        // hold the answers until (release_atom)
  std::optional<absl::Status> fail;         // answer every batch with this error
  std::vector<caf::typed_response_promise<bool>> held;

  // The record stored under `key`, parsed; nullopt when absent or unparseable.
  template <class Record>
  std::optional<Record> Get(const std::string& key) const {
    auto it = data.find(key);
    Record record;
    if (it == data.end() || !record.ParseFromString(it->second)) return std::nullopt;
    return record;
  }
};

using FakeWriterActor = StateWriterActor::extend<caf::reacts_to<release_atom>>;

inline FakeWriterActor::behavior_type FakeWriter(FakeWriterActor::pointer self,
                                                 std::shared_ptr<FakeDisk> disk) {
  return {
      [=](persist_atom, const StateBatch& batch) -> caf::result<bool> {
        disk->batches.push_back(batch);
        if (disk->fail) return ToError(*disk->fail);
        for (const auto& [key, value] : batch.ops) {
          if (value) {
            disk->data[key] = *value;
          } else {
            disk->data.erase(key);
          }
        }
        if (!disk->hold) return true;
        auto promise = self->make_response_promise<bool>();
        disk->held.push_back(promise);
        return promise;
      },
      [=](release_atom) {
        std::vector<caf::typed_response_promise<bool>> held = std::move(disk->held);
        disk->held.clear();
        for (auto& promise : held) {
          if (disk->fail) {
            promise.deliver(ToError(*disk->fail));
          } else {
            promise.deliver(true);
          }
        }
      },
  };
}

}  // namespace muster::testing
