// The network thread's event loop (net/transport/wire/event_loop.cc, guarded_stream.h) over real
// TCP on 127.0.0.1: network-hosted actors run on the network thread, others on the scheduler;
// replies of one turn leave together and large messages get through partial writes; the
// read-ahead serves CAF's exact-size reads from one recv.
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/io/middleman.hpp>
#include <caf/scheduled_actor.hpp>
#include <caf/scheduler/abstract_coordinator.hpp>
#include <caf/scoped_actor.hpp>

#include "muster/actors/caf/placement.h"
#include "muster/net/transport/node_config.h"
#include "muster/net/transport/wire/guarded_stream.h"

namespace muster {
namespace {

using namespace std::chrono_literals;
namespace net = caf::io::network;

std::string ThreadKey(std::thread::id id) {
  return std::to_string(std::hash<std::thread::id>{}(id));
}

// Answers every string with the calling thread's key, then the string.
caf::behavior WhereAmI(caf::event_based_actor* self, bool hosted) {
  if (hosted) HostOnNetworkThread(self);
  return {
      [](const std::string& text) { return ThreadKey(std::this_thread::get_id()) + " " + text; },
      [](caf::ok_atom) {}};
}

// WhereAmI, pinned to the network thread.
caf::behavior PinnedWhereAmI(caf::event_based_actor* self) {
  PinToNetworkThread(self);
  return WhereAmI(self, false);
}

// Hosted; hands each string to `next` and answers with its answer.
caf::behavior Forwarder(caf::event_based_actor* self, caf::actor next) {
  HostOnNetworkThread(self);
  return {[=](const std::string& text) { return self->delegate(next, text); }, [](caf::ok_atom) {}};
}

// Hosted; monitors each actor it is given and answers "watching"; tells `sink` on which thread
// it learnt that one went down.
caf::behavior DownWatcher(caf::event_based_actor* self, caf::actor sink) {
  HostOnNetworkThread(self);
  self->set_down_handler(
      [=](caf::down_msg&) { self->send(sink, ThreadKey(std::this_thread::get_id())); });
  return {[=](const caf::actor& target) {
            self->monitor(target);
            return std::string("watching");
          },
          [](caf::ok_atom) {}};
}

class EventLoopTest : public ::testing::Test {
 protected:
  // The actor systems wait for every actor at their end: stop the ones a test spawned.
  void TearDown() override {
    for (const auto& actor : spawned_) caf::anon_send_exit(actor, caf::exit_reason::user_shutdown);
  }

  // Spawns an actor and waits until it has initialised (so a hosted one is marked as such
  // before any message reaches it).
  template <class... Ts>
  caf::actor Spawn(caf::actor_system& system, Ts&&... xs) {
    spawned_.push_back(system.spawn(std::forward<Ts>(xs)...));
    caf::scoped_actor self{system};
    self->request(spawned_.back(), 10s, caf::ok_atom::value)
        .receive([] {}, [&](caf::error& error) { ADD_FAILURE() << system.render(error); });
    return spawned_.back();
  }

  // Publishes `actor` on the server node and returns its handle as the client node sees it.
  caf::actor Remote(const caf::actor& actor) {
    auto port = server_.middleman().publish(actor, 0, "127.0.0.1", true);
    EXPECT_TRUE(port) << server_.render(port.error());
    auto remote = client_.middleman().remote_actor("127.0.0.1", *port);
    EXPECT_TRUE(remote) << client_.render(remote.error());
    return *remote;
  }

  // Sends `message` (a string; an actor to a DownWatcher) from the client node and returns the
  // answer.
  template <class Message>
  std::string Ask(const caf::actor& actor, const Message& message) {
    return AskFrom(client_, actor, message);
  }

  // The same, from this thread (not an actor's) of `system`.
  template <class Message>
  std::string AskFrom(caf::actor_system& system, const caf::actor& actor, const Message& message) {
    caf::scoped_actor self{system};
    std::string answer;
    self->request(actor, 10s, message)
        .receive([&](std::string& reply) { answer = std::move(reply); },
                 [&](caf::error& error) { ADD_FAILURE() << system.render(error); });
    return answer;
  }

  std::string NetworkThread() { return ThreadKey(server_.middleman().backend().thread_id()); }

  // Waits (10 s at most) until `actor` has finished its turn with an empty mailbox: an actor
  // still in its turn handles a message that arrives meanwhile in the same turn, on the thread
  // it runs on, so only a message that wakes it shows where it is placed.
  static void WaitUntilIdle(const caf::actor& actor) {
    auto* self = static_cast<caf::scheduled_actor*>(caf::actor_cast<caf::abstract_actor*>(actor));
    auto deadline = std::chrono::steady_clock::now() + 10s;
    while (!self->mailbox().blocked() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::yield();
    }
    ASSERT_TRUE(self->mailbox().blocked());
  }

  // `answer` is the answer to `text`, given on a thread other than the server's network thread.
  void ExpectAnsweredOffTheNetworkThread(const std::string& answer, const std::string& text) {
    ASSERT_FALSE(answer.empty());
    EXPECT_NE(answer, NetworkThread() + " " + text);
    EXPECT_EQ(answer.substr(answer.size() - text.size() - 1), " " + text);
  }

  NodeConfig server_config_;
  caf::actor_system server_{server_config_};
  NodeConfig client_config_;
  caf::actor_system client_{client_config_};
  std::vector<caf::actor> spawned_;
};

TEST_F(EventLoopTest, HostedActorRunsOnTheNetworkThread) {
  auto remote = Remote(Spawn(server_, WhereAmI, true));
  EXPECT_EQ(Ask(remote, "a"), NetworkThread() + " a");
  EXPECT_EQ(Ask(remote, "b"), NetworkThread() + " b");
}

TEST_F(EventLoopTest, UnmarkedActorRunsOnASchedulerThread) {
  auto remote = Remote(Spawn(server_, WhereAmI, false));
  ExpectAnsweredOffTheNetworkThread(Ask(remote, "a"), "a");
}

TEST_F(EventLoopTest, MessagesBetweenHostedActorsStayOnTheNetworkThread) {
  auto last = Spawn(server_, WhereAmI, true);
  auto remote = Remote(Spawn(server_, Forwarder, last));
  EXPECT_EQ(Ask(remote, "x"), NetworkThread() + " x");
}

// Two actor systems in one process: a hosted actor of the client system, woken by the server's
// network thread, does not join the server's loop (its sends would reach the client's brokers
// from the wrong thread).
TEST_F(EventLoopTest, HostedActorOfAnotherSystemStaysOffThisNetworkThread) {
  auto other = Spawn(client_, WhereAmI, true);
  auto remote = Remote(Spawn(server_, Forwarder, other));
  ExpectAnsweredOffTheNetworkThread(Ask(remote, "z"), "z");
}

// A pinned actor of the client system, woken by the server's network thread, goes to the
// client's own network thread.
TEST_F(EventLoopTest, PinnedActorOfAnotherSystemRunsOnItsOwnNetworkThread) {
  auto other = Spawn(client_, PinnedWhereAmI);
  WaitUntilIdle(other);
  auto remote = Remote(Spawn(server_, Forwarder, other));
  EXPECT_EQ(Ask(remote, "p"), ThreadKey(client_.middleman().backend().thread_id()) + " p");
}

TEST_F(EventLoopTest, HostedActorWokenByALocalThreadRunsOnTheScheduler) {
  ExpectAnsweredOffTheNetworkThread(AskFrom(server_, Spawn(server_, WhereAmI, true), "y"), "y");
}

// A pinned actor runs on the network thread whoever wakes it: a user thread's message reaches it
// through the loop's wake-up pipe.
TEST_F(EventLoopTest, PinnedActorWokenByALocalThreadRunsOnTheNetworkThread) {
  // Pinning takes effect once the loop serves: a round trip through it makes sure it does (the
  // network thread may not have started when the system's constructor returned).
  ASSERT_EQ(Ask(Remote(Spawn(server_, WhereAmI, true)), "a"), NetworkThread() + " a");
  auto pinned = Spawn(server_, PinnedWhereAmI);
  // Its initialisation ran on a scheduler thread; "b" must wake it, not join that turn.
  WaitUntilIdle(pinned);
  EXPECT_EQ(AskFrom(server_, pinned, "b"), NetworkThread() + " b");
  EXPECT_EQ(AskFrom(server_, pinned, "c"), NetworkThread() + " c");
}

// CAF kills the proxy of a remote actor that went down (or whose connection was lost) without
// an execution unit, so the down message reaches the scheduler; the node's scheduler keeps a
// hosted monitor on the network thread all the same.
TEST_F(EventLoopTest, RemoteActorDown_HostedMonitorLearnsOnTheNetworkThread) {
  caf::scoped_actor sink{server_};
  auto remote = Remote(Spawn(server_, DownWatcher, caf::actor{sink}));
  auto target = client_.spawn(WhereAmI, false);
  ASSERT_EQ(Ask(remote, target), "watching");
  caf::anon_send_exit(target, caf::exit_reason::user_shutdown);
  std::string key;
  sink->receive([&](std::string& reply) { key = std::move(reply); },
                caf::after(10s) >> [] { ADD_FAILURE() << "no down message"; });
  EXPECT_EQ(key, NetworkThread());
}

// 500 requests in flight from one actor: their replies leave in few writes and all arrive.
TEST_F(EventLoopTest, ManyRequestsInFlight_AllAnsweredInOrder) {
  auto remote = Remote(Spawn(server_, WhereAmI, true));
  caf::scoped_actor self{client_};
  constexpr int kRequests = 500;
  std::vector<std::string> answers;
  auto collector = Spawn(client_, [&, remote](caf::event_based_actor* actor) -> caf::behavior {
    return {[&, actor, remote](int count) {
              auto promise = actor->make_response_promise<bool>();
              auto left = std::make_shared<int>(count);
              for (int i = 0; i < count; ++i) {
                actor->request(remote, 10s, std::to_string(i))
                    .then(
                        [&, promise, left](std::string& reply) mutable {
                          answers.push_back(reply.substr(reply.find(' ') + 1));
                          if (--*left == 0) promise.deliver(true);
                        },
                        [promise](caf::error& error) mutable { promise.deliver(error); });
              }
              return promise;
            },
            [](caf::ok_atom) {}};
  });
  bool done = false;
  self->request(collector, 30s, kRequests)
      .receive([&](bool ok) { done = ok; },
               [&](caf::error& error) { ADD_FAILURE() << client_.render(error); });
  ASSERT_TRUE(done);
  ASSERT_EQ(answers.size(), size_t{kRequests});
  for (int i = 0; i < kRequests; ++i) EXPECT_EQ(answers[i], std::to_string(i));
}

// A message far larger than the read-ahead and the socket buffers: written in parts (what the
// socket does not take waits for EPOLLOUT) and read in parts.
TEST_F(EventLoopTest, LargeMessagesBothWays) {
  auto remote = Remote(Spawn(server_, WhereAmI, true));
  std::string big(4 << 20, 'm');
  big[12345] = 'q';
  std::string answer = Ask(remote, big);
  EXPECT_EQ(answer, NetworkThread() + " " + big);
  EXPECT_EQ(Ask(remote, "small"), NetworkThread() + " small");
}

class WirePolicyTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds_), 0); }
  void TearDown() override {
    ::close(fds_[0]);
    ::close(fds_[1]);
  }
  void Send(const std::string& bytes) {
    ASSERT_EQ(::write(fds_[1], bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  }
  // One read_some of at most `len` bytes.
  std::string Read(size_t len) {
    std::string buf(len, '\0');
    size_t got = 99;
    EXPECT_EQ(policy_.read_some(got, fds_[0], buf.data(), len), net::rw_state::success);
    buf.resize(got);
    return buf;
  }

  int fds_[2] = {-1, -1};
  WirePolicy policy_{nullptr};
};

TEST_F(WirePolicyTest, ExactReadsAreServedFromOneRecv) {
  ASSERT_EQ(::fcntl(fds_[0], F_SETFL, O_NONBLOCK), 0);
  Send("headerPAYLOAD-1header2");
  EXPECT_EQ(Read(6), "header");
  EXPECT_TRUE(policy_.must_read_more(fds_[0], 9));
  EXPECT_FALSE(policy_.must_read_more(fds_[0], 17));
  EXPECT_EQ(Read(9), "PAYLOAD-1");
  EXPECT_EQ(Read(7), "header2");
  EXPECT_FALSE(policy_.must_read_more(fds_[0], 1));
  // The recv took less than it asked for: the socket is empty, the next read says so without
  // asking the kernel; after that it asks again and gets what came meanwhile.
  Send("later");
  EXPECT_EQ(Read(5), "");
  EXPECT_EQ(Read(5), "later");
}

TEST_F(WirePolicyTest, NothingToRead_ReportsNoBytes) {
  ASSERT_EQ(::fcntl(fds_[0], F_SETFL, O_NONBLOCK), 0);
  EXPECT_EQ(Read(32), "");
}

TEST_F(WirePolicyTest, PeerClosed_IsAFailure) {
  ASSERT_EQ(::fcntl(fds_[0], F_SETFL, O_NONBLOCK), 0);
  ::shutdown(fds_[1], SHUT_WR);
  char buf[8];
  size_t got = 0;
  EXPECT_EQ(policy_.read_some(got, fds_[0], buf, sizeof(buf)), net::rw_state::failure);
}

// The low-latency scheduler's size comes from NodeOptions: two threads by default, one for a
// node whose scheduled actors never block (the Python binding's agents), never fewer.
TEST(NodeSchedulerTest, ThreadsFromNodeOptions) {
  auto workers = [](int threads) {
    NodeOptions options;
    options.scheduler_threads = threads;
    NodeConfig config{options};
    caf::actor_system system{config};
    return system.scheduler().num_workers();
  };
  EXPECT_EQ(workers(NodeOptions{}.scheduler_threads), 2u);
  EXPECT_EQ(workers(1), 1u);
  EXPECT_EQ(workers(0), 1u);
  EXPECT_EQ(workers(-3), 1u);
}

}  // namespace
}  // namespace muster
