#include "muster/net/launcher/spare_pool.h"

#include <signal.h>

#include <cstdint>
#include <random>

#include <absl/strings/str_cat.h>
#include <absl/strings/str_format.h>

#include "muster/net/process/launch_environment.h"

namespace muster::cli {
namespace {

constexpr int kMaxSpareFailures = 3;

// 128 random bits: the part of a spare's key nobody else knows.
std::string Secret() {
  std::random_device random;
  auto word = [&random] { return (uint64_t{random()} << 32) | random(); };
  return absl::StrFormat("%016x%016x", word(), word());
}

}  // namespace

SparePool::SparePool(int size, std::string key_prefix, std::vector<std::string> command,
                     TaskProcess::Environment environment)
    : size_(size),
      key_prefix_(std::move(key_prefix)),
      command_(std::move(command)),
      environment_(std::move(environment)) {}

void SparePool::Refill(const SayFn& say) {
  while (!stopped_ && running() < size_ && failures_ < kMaxSpareFailures) {
    Spare spare{.key = absl::StrCat(key_prefix_, Secret()),
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

std::optional<SparePool::Spare> SparePool::Take(const SayFn& say) {
  while (!stopped_ && !spares_.empty()) {
    Spare spare = std::move(spares_.front());
    spares_.erase(spares_.begin());
    if (std::optional<ProcessExit> exit = spare.process->Poll()) {
      Exited(spare, *exit, say);
      continue;
    }
    return spare;
  }
  return std::nullopt;
}

void SparePool::Exited(const Spare& spare, const ProcessExit& exit, const SayFn& say) {
  if (stopped_) return;  // told to leave
  ++failures_;
  say(absl::StrCat(
      spare.label, " (pid ", spare.process->pid(), ") ", exit.ToString(),
      failures_ < kMaxSpareFailures
          ? "; starting another"
          : absl::StrCat("; ", failures_, " spares exited on their own: no more spares")));
}

void SparePool::Poll(caf::actor_clock::time_point now, const LineFn& line, const SayFn& say) {
  for (size_t i = 0; i < spares_.size();) {
    Spare& spare = spares_[i];
    auto print = [&](absl::string_view text, bool is_stderr) {
      line(spare.label, text, is_stderr);
    };
    spare.process->DrainOutput(print);
    std::optional<ProcessExit> exit = spare.process->Poll();
    if (!exit) {
      if (kill_at_ && now >= *kill_at_) spare.process->Signal(SIGKILL);
      ++i;
      continue;
    }
    spare.process->DrainOutput(print);
    Exited(spare, *exit, say);
    spares_.erase(spares_.begin() + i);
  }
}

void SparePool::Stop(int signal, caf::actor_clock::time_point kill_at) {
  if (!stopped_) kill_at_ = kill_at;
  stopped_ = true;
  for (Spare& spare : spares_) spare.process->Signal(signal);
}

}  // namespace muster::cli
