#include "muster/tools/kv/kv_watcher_actor.h"

#include <cstdio>

#include <absl/strings/escaping.h>
#include <absl/strings/str_cat.h>

namespace muster::cli {
namespace {

struct KvPrinterState {
  static inline const char* name = "muster.cli.kv_printer";
  int64_t count = 0;  // 0: unlimited
  int64_t printed = 0;
  KvPrinterListener listener;
};

using KvPrinterPointer = KvWatcherActor::stateful_pointer<KvPrinterState>;

void Print(KvPrinterPointer self, const proto::KeyValueChangeEvent& event) {
  auto& st = self->state;
  if (st.count > 0 && st.printed >= st.count) return;
  std::printf("%s\n", FormatChangeEvent(event).c_str());
  std::fflush(stdout);
  if (++st.printed == st.count) self->send(st.listener, watch_done_atom::value);
}

KvWatcherActor::behavior_type KvPrinterBehavior(KvPrinterPointer self, int64_t count,
                                                KvPrinterListener listener) {
  self->state.count = count;
  self->state.listener = std::move(listener);
  return {
      [=](const proto::KeyValueChangeEvent& event) { Print(self, event); },
  };
}

}  // namespace

std::string FormatChangeEvent(const proto::KeyValueChangeEvent& event) {
  std::string kind = proto::KeyValueChangeEvent::Kind_Name(event.kind());
  std::string line = absl::StrCat(kind, " ", event.key(), " revision=", event.revision());
  if (event.kind() != proto::KeyValueChangeEvent::DELETED) {
    absl::StrAppend(&line, " value=", absl::CHexEscape(event.value()));
  }
  return line;
}

KvWatcherActor SpawnKvPrinter(caf::actor_system& system, int64_t count,
                              KvPrinterListener listener) {
  return system.spawn(KvPrinterBehavior, count, std::move(listener));
}

}  // namespace muster::cli
