#include "muster/net/launcher/spare_pool.h"

#include <absl/strings/str_cat.h>

#include "muster/net/process/launch_environment.h"

namespace muster::cli {

constexpr int kMaxSpareFailuresInARow = 3;

SparePool::SparePool(int size, std::string key_prefix, std::vector<std::string> command,
                     TaskProcess::Environment environment)
    : size_(size),
      key_prefix_(std::move(key_prefix)),
      command_(std::move(command)),
      environment_(std::move(environment)) {}

void SparePool::Refill(const SayFn& say) {
  while (!stopped_ && running() < size_ && failures_in_a_row_ < kMaxSpareFailuresInARow) {
    Spare spare{.key = absl::StrCat(key_prefix_, started_),
                .label = absl::StrCat("spare/", started_)};
    ++started_;
    TaskProcess::Environment env = environment_;
    env.emplace_back(kSpareEnv, spare.key);
    auto process = TaskProcess::Start(command_, env);
    if (!process.ok()) {
      say(absl::StrCat(spare.label, " could not be started: ", process.status().message(),
                       "; no spares"));
      stopped_ = true;
      return;
    }
    spare.process = *std::move(process);
    say(absl::StrCat("started ", spare.label, " (pid ", spare.process->pid(), ")"));
    spares_.push_back(std::move(spare));
  }
}

std::optional<SparePool::Spare> SparePool::Take() {
  if (spares_.empty()) return std::nullopt;
  Spare spare = std::move(spares_.front());
  spares_.erase(spares_.begin());
  failures_in_a_row_ = 0;
  return spare;
}

void SparePool::Poll(const std::function<void(const std::string& label, absl::string_view line,
                                              bool is_stderr)>& line,
                     const SayFn& say) {
  for (size_t i = 0; i < spares_.size();) {
    Spare& spare = spares_[i];
    auto print = [&](absl::string_view text, bool is_stderr) {
      line(spare.label, text, is_stderr);
    };
    spare.process->DrainOutput(print);
    std::optional<ProcessExit> exit = spare.process->Poll();
    if (!exit) {
      ++i;
      continue;
    }
    spare.process->DrainOutput(print);
    if (!stopped_) {
      ++failures_in_a_row_;
      say(absl::StrCat(spare.label, " (pid ", spare.process->pid(), ") ", exit->ToString(),
                       failures_in_a_row_ < kMaxSpareFailuresInARow
                           ? "; starting another"
                           : "; spares keep exiting: no more spares"));
    }
    spares_.erase(spares_.begin() + i);
  }
}

void SparePool::Stop(int signal) {
  stopped_ = true;
  for (Spare& spare : spares_) spare.process->Signal(signal);
}

}  // namespace muster::cli
