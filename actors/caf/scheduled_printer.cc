#include "muster/actors/caf/scheduled_printer.h"

#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <unordered_map>
#include <utility>

#include <caf/actor_ostream.hpp>
#include <caf/type_id.hpp>

namespace muster {
namespace {

struct PrinterState {
  struct Line {
    std::string text;
    std::string file;  // a redirect of its own; "" for the default
  };
  PrinterSink out;
  std::string all_file;  // the redirect of every actor; "" for none
  std::unordered_map<caf::actor_id, Line> lines;
  std::map<std::string, std::shared_ptr<std::ofstream>> files;

  // The stream for `name`, opened once (appending with actor_ostream::append); null when it
  // cannot be opened (output then goes to the default sink, as CAF's printer does).
  std::shared_ptr<std::ofstream> File(const std::string& name, int flags) {
    auto it = files.find(name);
    if (it != files.end()) return it->second;
    auto mode =
        (flags & caf::actor_ostream::append) != 0 ? std::ios::out | std::ios::app : std::ios::out;
    auto file = std::make_shared<std::ofstream>(name, mode);
    if (!file->is_open()) return nullptr;
    files.emplace(name, file);
    return file;
  }

  void Print(Line& line, bool forced) {
    if (line.text.empty() || (!forced && line.text.back() != '\n')) return;
    const std::string& name = line.file.empty() ? all_file : line.file;
    auto it = name.empty() ? files.end() : files.find(name);
    std::shared_ptr<std::ofstream> file = it == files.end() ? nullptr : it->second;
    if (file) {
      *file << line.text << std::flush;
    } else {
      out(line.text);
    }
    line.text.clear();
  }
};

}  // namespace

caf::behavior ScheduledPrinter(caf::event_based_actor* self, PrinterSink out) {
  auto st = std::make_shared<PrinterState>();
  st->out = out ? std::move(out) : [](const std::string& text) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
  };
  self->attach_functor([st](const caf::error&) {
    for (auto& [id, line] : st->lines) st->Print(line, /*forced=*/true);
  });
  return {
      [st](caf::add_atom, caf::actor_id id, std::string& text) {
        if (text.empty() || id == caf::invalid_actor_id) return;
        PrinterState::Line& line = st->lines[id];
        line.text += text;
        st->Print(line, /*forced=*/false);
      },
      [st](caf::flush_atom, caf::actor_id id) {
        if (auto it = st->lines.find(id); it != st->lines.end()) st->Print(it->second, true);
      },
      [st](caf::delete_atom, caf::actor_id id) {
        if (auto it = st->lines.find(id); it != st->lines.end()) {
          st->Print(it->second, /*forced=*/true);
          st->lines.erase(it);
        }
      },
      [st](caf::redirect_atom, const std::string& file, int flags) {
        st->all_file = !file.empty() && st->File(file, flags) ? file : std::string();
      },
      [st](caf::redirect_atom, caf::actor_id id, const std::string& file, int flags) {
        if (id == caf::invalid_actor_id) return;
        st->lines[id].file = !file.empty() && st->File(file, flags) ? file : std::string();
      },
  };
}

}  // namespace muster
