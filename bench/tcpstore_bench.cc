// PyTorch's c10d TCPStore (libtorch 1.13, C++ API) through the same workloads as Muster: a
// server process and client processes, every client (task, rank) with its own TCPStore.
//
// Run:  ./build/bench/tcpstore_bench --workload=seq --variant=get     (or add)
//       ./build/bench/tcpstore_bench --workload=barrier --param=1024
// The barrier is PyTorch's store-based one: add(count, 1); the last arriver sets a done key;
// everyone waits for it. Bring-up is connect + add + wait for all.
// Prints CSV rows system,variant,workload,param,metric,value,unit (driver.h).
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "muster/bench/driver.h"
#include "muster/bench/harness.h"
#include "muster/bench/stats.h"

namespace muster::bench {
namespace {

constexpr char kKey[] = "bench/key";

std::unique_ptr<c10d::TCPStore> Connect(int port) {
  c10d::TCPStoreOptions options;
  options.port = static_cast<uint16_t>(port);
  options.isServer = false;
  options.waitWorkers = false;
  options.timeout = std::chrono::seconds(60);
  return std::make_unique<c10d::TCPStore>("127.0.0.1", options);
}

// One operation of the variant: get (two round trips in 1.13: wait, then get) or add (one).
void Op(c10d::TCPStore& store, const std::string& variant) {
  if (variant == "add") {
    store.add("bench/counter", 1);
  } else {
    store.get(kKey);
  }
}

int Server() {
  c10d::TCPStoreOptions options;
  options.port = 0;
  options.isServer = true;
  options.waitWorkers = false;
  options.timeout = std::chrono::seconds(60);
  c10d::TCPStore store("127.0.0.1", options);
  store.set(kKey, std::vector<uint8_t>(16, 'v'));
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  Emit("ready", "port=" + std::to_string(store.getPort()));
  int received = 0;
  sigwait(&signals, &received);
  return 0;
}

int Seq(const ClientArgs& args) {
  auto store = Connect(args.port);
  Emit("ready");
  WaitForGo();
  for (int64_t i = 0; i < args.warmup; ++i) Op(*store, args.variant);
  std::vector<double> us;
  us.reserve(static_cast<size_t>(args.ops));
  for (int64_t i = 0; i < args.ops; ++i) {
    int64_t start = MonoNs();
    Op(*store, args.variant);
    us.push_back((MonoNs() - start) / 1e3);
  }
  EmitSeqResult(us);
  return 0;
}

// Runs body(i) on Count() threads that all start when the driver says go; returns when all end.
template <class Setup, class Body>
void OnThreads(const ClientArgs& args, Setup setup, Body body) {
  std::mutex mutex;
  std::condition_variable cv;
  bool go = false;
  std::atomic<int64_t> set_up{0};
  std::vector<std::thread> threads;
  for (int64_t i = 0; i < args.Count(); ++i) {
    threads.emplace_back([&, i] {
      setup(i);
      ++set_up;
      std::unique_lock lock(mutex);
      cv.wait(lock, [&] { return go; });
      lock.unlock();
      body(i);
    });
  }
  while (set_up < args.Count()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  Emit("ready");
  WaitForGo();
  {
    std::lock_guard lock(mutex);
    go = true;
  }
  cv.notify_all();
  for (auto& thread : threads) thread.join();
}

int Conc(const ClientArgs& args) {
  std::vector<std::unique_ptr<c10d::TCPStore>> stores(static_cast<size_t>(args.Count()));
  std::vector<int64_t> ops(stores.size());
  int64_t start = 0;
  OnThreads(
      args, [&](int64_t i) { stores[i] = Connect(args.port); },
      [&](int64_t i) {
        int64_t end = MonoNs() + args.duration_ms * 1'000'000;
        if (i == 0) start = MonoNs();
        for (; MonoNs() < end; ++ops[i]) Op(*stores[i], args.variant);
      });
  int64_t total = 0;
  for (int64_t n : ops) total += n;
  Emit("result", "ops=" + std::to_string(total) +
                     " elapsed_ns=" + std::to_string(std::max<int64_t>(1, MonoNs() - start)));
  return 0;
}

// PyTorch's store-based barrier: add(count, 1); the last arriver sets the done key; all wait.
void StoreBarrier(c10d::TCPStore& store, int64_t participants, int64_t round) {
  std::string prefix = "barrier/" + std::to_string(round);
  if (store.add(prefix + "/count", 1) == participants) {
    store.set(prefix + "/done", std::vector<uint8_t>{'1'});
  }
  store.wait({prefix + "/done"});
}

int Barrier(const ClientArgs& args) {
  size_t tasks = static_cast<size_t>(args.Count()), rounds = static_cast<size_t>(args.rounds);
  std::vector<std::unique_ptr<c10d::TCPStore>> stores(tasks);
  std::vector<std::vector<int64_t>> sent(tasks, std::vector<int64_t>(rounds));
  std::vector<std::vector<int64_t>> released = sent;
  OnThreads(
      args, [&](int64_t i) { stores[i] = Connect(args.port); },
      [&](int64_t i) {
        for (size_t r = 0; r < rounds; ++r) {
          sent[i][r] = MonoNs();
          StoreBarrier(*stores[i], args.param, static_cast<int64_t>(r));
          released[i][r] = MonoNs();
        }
      });
  for (size_t r = 0; r < rounds; ++r) {
    int64_t first = INT64_MAX, last = 0, release = 0;
    for (size_t i = 0; i < tasks; ++i) {
      first = std::min(first, sent[i][r]);
      last = std::max(last, sent[i][r]);
      release = std::max(release, released[i][r]);
    }
    Emit("round", "r=" + std::to_string(r) + " first=" + std::to_string(first) +
                      " last=" + std::to_string(last) + " release=" + std::to_string(release));
  }
  Emit("done");
  return 0;
}

// Each task: connect, add itself to the count, the last one sets the ready key, all wait for it.
int Bringup(const ClientArgs& args) {
  std::atomic<int64_t> end{0};
  std::vector<std::unique_ptr<c10d::TCPStore>> stores(static_cast<size_t>(args.Count()));
  OnThreads(
      args, [](int64_t) {},
      [&](int64_t i) {
        stores[i] = Connect(args.port);
        if (stores[i]->add("bringup/count", 1) == args.param) {
          stores[i]->set("bringup/ready", std::vector<uint8_t>{'1'});
        }
        stores[i]->wait({"bringup/ready"});
        int64_t now = MonoNs(), seen = end.load();
        while (now > seen && !end.compare_exchange_weak(seen, now)) {
        }
      });
  Emit("result", "end=" + std::to_string(end.load()));
  return 0;
}

int Client(const Flags& flags) {
  ClientArgs args = ParseClientArgs(flags);
  if (flags.Get("role") == "server") return Server();
  if (args.workload == "seq") return Seq(args);
  if (args.workload == "conc") return Conc(args);
  if (args.workload == "barrier") return Barrier(args);
  if (args.workload == "bringup") return Bringup(args);
  std::fprintf(stderr, "tcpstore_bench: workload %s does not apply to TCPStore\n",
               args.workload.c_str());
  return 2;
}

int RunChild(const Flags& flags) {
  BecomeChild(flags.Int("deadline_s", 120));
  try {
    return Client(flags);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "tcpstore_bench %s: %s\n", flags.Get("role").c_str(), error.what());
    return 1;
  }
}

}  // namespace
}  // namespace muster::bench

int main(int argc, char** argv) {
  muster::bench::Flags flags(argc, argv);
  if (flags.Has("role")) return muster::bench::RunChild(flags);  // one process, by hand
  return muster::bench::RunDriver(flags, "tcpstore", &muster::bench::RunChild);
}
