// Mutual TLS: the certificate files (muster tls init's), their checks and rotation, and real
// connections between actor systems on 127.0.0.1: same CA works; a plain peer, a peer of another
// CA and a TLS peer of a plain leader get nothing.
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <absl/strings/str_cat.h>
#include <absl/time/clock.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <caf/actor_system.hpp>
#include <caf/io/middleman.hpp>
#include <caf/make_message.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>

#include "muster/net/agent/agent.h"
#include "muster/net/leader/leader.h"
#include "muster/net/transport/node_config.h"
#include "muster/net/transport/tls/certificate_identity.h"
#include "muster/net/transport/tls/job_certificates.h"
#include "muster/net/transport/tls/tls_context.h"
#include "muster/net/transport/wire/guarded_multiplexer.h"
#include "tests/testing/status_matchers.h"

namespace muster {
namespace {

using ::muster::testing::IsOk;
using ::muster::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;
using Code = absl::StatusCode;

// One directory per test process: ctest runs the tests of this file in parallel processes.
std::string Dir(const std::string& name) {
  return absl::StrCat(::testing::TempDir(), "muster_tls_", ::getpid(), "_", name);
}

TlsFiles FilesOf(const std::string& dir, const std::string& node) {
  return {
      .cert = dir + "/" + node + ".pem", .key = dir + "/" + node + ".key", .ca = dir + "/ca.pem"};
}

class TlsTest : public ::testing::Test {
 protected:
  static void TearDownTestSuite() {
    for (const char* name :
         {"a", "b", "c", "rotate", "garbage.pem", "tasks", "bind", "bundle.pem"}) {
      std::filesystem::remove_all(Dir(name));
    }
  }
  static void SetUpTestSuite() {
    for (const char* name : {"a", "b"}) std::filesystem::remove_all(Dir(name));
    ASSERT_THAT(WriteJobCertificates(Dir("a"), {"leader", "worker"}), IsOk());
    ASSERT_THAT(WriteJobCertificates(Dir("b"), {"leader", "worker"}), IsOk());
  }
};

// The identity a certificate's subject gives, as a leader reads it.
absl::StatusOr<CertificateIdentity> IdentityOfFile(const std::string& file) {
  std::unique_ptr<FILE, decltype(&std::fclose)> in(std::fopen(file.c_str(), "r"), std::fclose);
  if (!in) return absl::NotFoundError(file);
  std::unique_ptr<X509, decltype(&X509_free)> cert(
      PEM_read_X509(in.get(), nullptr, nullptr, nullptr), X509_free);
  return IdentityOfCertificate(cert.get());
}

TEST_F(TlsTest, TaskCertificates_NameTheirTasksAndTheCaBindsThem) {
  const std::string dir = Dir("tasks");
  std::filesystem::remove_all(dir);
  ASSERT_THAT(WriteJobCertificates(dir, {"leader", "cli"}, 30, {{"worker", 3}, {"ps", 1}}), IsOk());
  EXPECT_EQ(CaBindsTasks(dir + "/ca.pem").value_or(false), true);
  EXPECT_EQ(CaBindsTasks(Dir("a") + "/ca.pem").value_or(true), false);
  EXPECT_THAT(CaBindsTasks(dir + "/none.pem"), StatusIs(Code::kNotFound));
  EXPECT_THAT(CaBindsTasks(dir + "/ca.key"), StatusIs(Code::kInvalidArgument));
  auto task = IdentityOfFile(dir + "/task-worker-2.pem");
  ASSERT_THAT(task, IsOk());
  EXPECT_EQ(task->kind, CertificateIdentity::Kind::kTask);
  EXPECT_EQ(task->name, "/job:worker/task:2");
  auto ps = IdentityOfFile(dir + "/task-ps-0.pem");
  ASSERT_THAT(ps, IsOk());
  EXPECT_EQ(ps->name, "/job:ps/task:0");
  EXPECT_FALSE(std::filesystem::exists(dir + "/task-worker-3.pem"));
  auto cli = IdentityOfFile(dir + "/cli.pem");
  ASSERT_THAT(cli, IsOk());
  EXPECT_EQ(cli->kind, CertificateIdentity::Kind::kCli);
  auto leader = IdentityOfFile(dir + "/leader.pem");
  ASSERT_THAT(leader, IsOk());
  EXPECT_EQ(leader->kind, CertificateIdentity::Kind::kNode);
  EXPECT_EQ(leader->name, "leader");
  // Task certificates load like any other.
  EXPECT_THAT(CheckTlsFiles({.cert = dir + "/task-worker-0.pem",
                             .key = dir + "/task-worker-0.key",
                             .ca = dir + "/ca.pem"}),
              IsOk());
  EXPECT_THAT(IdentityOfCertificate(nullptr), StatusIs(Code::kInvalidArgument));
}

// A file holding an old CA and a new one while they rotate: binding is on when any is marked.
TEST_F(TlsTest, TaskCertificates_ACaBundleBindsWhenAnyOfItsCasDoes) {
  const std::string dir = Dir("tasks");
  std::filesystem::remove_all(dir);
  ASSERT_THAT(WriteJobCertificates(dir, {"leader"}, 30, {{"worker", 1}}), IsOk());
  {
    std::ofstream bundle(Dir("bundle.pem"), std::ios::trunc);
    bundle << std::ifstream(Dir("a") + "/ca.pem").rdbuf() << std::ifstream(dir + "/ca.pem").rdbuf();
  }
  EXPECT_EQ(CaBindsTasks(Dir("bundle.pem")).value_or(false), true);
}

// Without a listener nothing is held; with one, a node is held under one certificate until its
// last connection goes, and the listener hears of each connection.
TEST_F(TlsTest, Multiplexer_ANodeSpeaksWithOneCertificate) {
  NodeConfig config;
  caf::actor_system system{config};
  auto* mpx = dynamic_cast<GuardedMultiplexer*>(&system.middleman().backend());
  ASSERT_NE(mpx, nullptr);
  caf::node_id::default_data::host_id_type host{};
  host.fill(3);
  const caf::node_id node = caf::make_node_id(42, host);
  const CertificateIdentity task0{CertificateIdentity::Kind::kTask, "/job:worker/task:0"};
  const CertificateIdentity task1{CertificateIdentity::Kind::kTask, "/job:worker/task:1"};
  EXPECT_TRUE(mpx->HoldPeerIdentity(node, task0));  // binding off
  EXPECT_TRUE(mpx->HoldPeerIdentity(node, task1));
  std::vector<std::string> told;
  mpx->SetPeerIdentityListener(
      [&](const caf::node_id&, const CertificateIdentity& identity, bool connected) {
        told.push_back(absl::StrCat(identity.name, connected ? " up" : " down"));
      });
  EXPECT_TRUE(mpx->HoldPeerIdentity(node, task0));
  EXPECT_FALSE(mpx->HoldPeerIdentity(node, task1));
  EXPECT_FALSE(mpx->HoldPeerIdentity(node, {CertificateIdentity::Kind::kUnknown, ""}));
  EXPECT_TRUE(mpx->HoldPeerIdentity(node, task0));
  mpx->ReleasePeerIdentity(node, task0);
  EXPECT_FALSE(mpx->HoldPeerIdentity(node, task1));
  mpx->ReleasePeerIdentity(node, task0);
  EXPECT_TRUE(mpx->HoldPeerIdentity(node, task1));
  EXPECT_THAT(told, ::testing::ElementsAre("/job:worker/task:0 up", "/job:worker/task:0 up",
                                           "/job:worker/task:0 down", "/job:worker/task:0 down",
                                           "/job:worker/task:1 up"));
  mpx->ReleasePeerIdentity(node, task1);
}

TEST_F(TlsTest, TaskCertificates_BadJobsAreRefusedBeforeAnythingIsWritten) {
  const std::string dir = Dir("c");
  EXPECT_THAT(WriteJobCertificates(dir, {"leader"}, 30, {{"worker", 1}, {"worker", 2}}),
              StatusIs(Code::kInvalidArgument, HasSubstr("given twice")));
  EXPECT_THAT(WriteJobCertificates(dir, {"leader", "task-worker-0"}, 30, {{"worker", 1}}),
              StatusIs(Code::kInvalidArgument, HasSubstr("a task's file")));
  EXPECT_THAT(WriteJobCertificates(dir, {"leader", "leader"}), StatusIs(Code::kInvalidArgument));
  EXPECT_THAT(WriteJobCertificates(dir, {"leader"}, 30, {{"bad job", 2}}),
              StatusIs(Code::kInvalidArgument, HasSubstr("bad job name")));
  EXPECT_THAT(WriteJobCertificates(dir, {"leader"}, 30, {{std::string(41, 'j'), 2}}),
              StatusIs(Code::kInvalidArgument));
  EXPECT_THAT(WriteJobCertificates(dir, {"leader"}, 30, {{"worker", 0}}),
              StatusIs(Code::kInvalidArgument, HasSubstr("give 1 to 100000")));
  EXPECT_FALSE(std::filesystem::exists(dir + "/ca.pem"));
}

TEST_F(TlsTest, JobCertificates_CheckAndRefuseToOverwrite) {
  EXPECT_THAT(CheckTlsFiles(FilesOf(Dir("a"), "leader")), IsOk());
  EXPECT_THAT(CheckTlsFiles(FilesOf(Dir("a"), "worker")), IsOk());
  struct stat key {};
  ASSERT_EQ(::stat((Dir("a") + "/worker.key").c_str(), &key), 0);
  EXPECT_EQ(key.st_mode & 0777, 0600);
  EXPECT_THAT(WriteJobCertificates(Dir("a"), {"other"}),
              StatusIs(Code::kAlreadyExists, HasSubstr("ca.key exists already")));
  EXPECT_THAT(WriteJobCertificates(Dir("c"), {"bad name"}),
              StatusIs(Code::kInvalidArgument, HasSubstr("bad node name \"bad name\"")));
  EXPECT_THAT(WriteJobCertificates(Dir("c"), {"ca"}), StatusIs(Code::kInvalidArgument));
  EXPECT_THAT(WriteJobCertificates(Dir("c"), {"x"}, 0), StatusIs(Code::kInvalidArgument));
}

TEST_F(TlsTest, CheckTlsFiles_NamesTheFileAndTheCause) {
  EXPECT_THAT(CheckTlsFiles({}), IsOk());  // TLS off
  EXPECT_THAT(CheckTlsFiles({.cert = Dir("a") + "/leader.pem"}),
              StatusIs(Code::kInvalidArgument, HasSubstr("some are missing")));
  TlsFiles missing = FilesOf(Dir("a"), "leader");
  missing.ca = Dir("a") + "/nope.pem";
  EXPECT_THAT(CheckTlsFiles(missing),
              StatusIs(Code::kNotFound, HasSubstr("cannot read the TLS CA file " + missing.ca)));
  TlsFiles mismatched = FilesOf(Dir("a"), "leader");
  mismatched.key = Dir("a") + "/worker.key";
  EXPECT_THAT(CheckTlsFiles(mismatched),
              StatusIs(Code::kInvalidArgument, HasSubstr("does not match the certificate")));
  TlsFiles garbage = FilesOf(Dir("a"), "leader");
  garbage.cert = Dir("garbage.pem");
  std::ofstream(garbage.cert) << "not a certificate\n";
  EXPECT_THAT(CheckTlsFiles(garbage),
              StatusIs(Code::kInvalidArgument,
                       HasSubstr("the TLS certificate " + garbage.cert + " does not load")));
}

TEST_F(TlsTest, TlsContext_NewFilesReplaceTheContextBrokenOnesAreRefused) {
  std::string dir = Dir("rotate");
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  TlsFiles files{.cert = dir + "/node.pem", .key = dir + "/node.key", .ca = dir + "/ca.pem"};
  auto install = [&](const std::string& from_dir, const std::string& node) {
    using std::filesystem::copy_options;
    TlsFiles from = FilesOf(from_dir, node);
    std::filesystem::copy_file(from.cert, files.cert, copy_options::overwrite_existing);
    std::filesystem::copy_file(from.key, files.key, copy_options::overwrite_existing);
    std::filesystem::copy_file(from.ca, files.ca, copy_options::overwrite_existing);
  };
  install(Dir("a"), "leader");
  std::vector<std::string> reports;
  TlsContext context(
      files, [&](const std::string& line) { reports.push_back(line); },
      std::chrono::steady_clock::duration{0});
  SslContextPtr first = context.Get();
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(context.Get(), first);  // unchanged files: the same context
  std::ofstream(files.key, std::ios::trunc) << "broken\n";
  EXPECT_EQ(context.Get(), first);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_THAT(reports[0], HasSubstr("changed TLS files refused"));
  install(Dir("b"), "worker");
  SslContextPtr second = context.Get();
  EXPECT_NE(second, nullptr);
  EXPECT_NE(second, first);
  EXPECT_EQ(reports.size(), 1u);
}

CoordinatorOptions OneWorkerJob() {
  CoordinatorOptions options;
  auto* job = options.config.add_coordinated_job_list();
  job->set_name("worker");
  job->set_num_tasks(1);
  return options;
}

NodeOptions WithTls(NodeOptions node, const TlsFiles& files) {
  node.tls = files;
  return node;
}

// A leader node and a worker node, each with its own TLS files (empty: plain TCP).
class TlsConnectionTest : public TlsTest {
 protected:
  void Start(const TlsFiles& leader_tls, const TlsFiles& worker_tls, std::string token = {}) {
    token_ = token;
    leader_config_ = std::make_unique<NodeConfig>(WithTls({}, leader_tls));
    leader_system_ = std::make_unique<caf::actor_system>(*leader_config_);
    worker_config_ = std::make_unique<NodeConfig>(WithTls(WorkerNodeOptions(), worker_tls));
    worker_system_ = std::make_unique<caf::actor_system>(*worker_config_);
    auto leader = Leader::Start(*leader_system_, OneWorkerJob(), {.token = std::move(token)});
    ASSERT_THAT(leader.status(), IsOk());
    leader_ = *std::move(leader);
  }

  void TearDown() override {
    agent_.reset();
    leader_.reset();
    worker_system_.reset();
    leader_system_.reset();
  }

  // A TLS handshake this node rejects never heals: it fails Connect() at once, long before the
  // register timeout.
  absl::Status Connect(absl::Duration register_timeout = absl::Seconds(30),
                       bool wait_for_leader = true) {
    AgentOptions options;
    options.leader = leader_->address();
    options.register_timeout = register_timeout;
    options.wait_for_leader = wait_for_leader;
    options.token = token_;
    auto agent = Agent::Create(*worker_system_, options, [](const absl::Status&) {});
    if (!agent.ok()) return agent.status();
    agent_ = *std::move(agent);
    return agent_->Connect();
  }

  std::string token_;
  std::unique_ptr<NodeConfig> leader_config_, worker_config_;
  std::unique_ptr<caf::actor_system> leader_system_, worker_system_;
  std::unique_ptr<Leader> leader_;
  std::unique_ptr<Agent> agent_;
};

TEST_F(TlsConnectionTest, SameCa_TheJobWorks) {
  Start(FilesOf(Dir("a"), "leader"), FilesOf(Dir("a"), "worker"));
  ASSERT_THAT(Connect(), IsOk());
  ASSERT_THAT(agent_->InsertKeyValue("config/lr", "0.01"), IsOk());
  auto value = agent_->GetKeyValue("config/lr", absl::Seconds(5));
  ASSERT_THAT(value.status(), IsOk());
  EXPECT_EQ(*value, "0.01");
  // Larger than one TLS record (16 KiB): frames cross record boundaries.
  std::string big(200 * 1024, 'x');
  ASSERT_THAT(agent_->InsertKeyValue("blob", big), IsOk());
  auto blob = agent_->GetKeyValue("blob", absl::Seconds(5));
  ASSERT_THAT(blob.status(), IsOk());
  EXPECT_EQ(*blob, big);
  EXPECT_THAT(agent_->Shutdown(), IsOk());
}

// With TLS the leader's network thread asked for EPOLLOUT after an actor's reply, but CAF
// applied the request only after its next wait: with the token gate in the path, a reply then
// waited for the leader's next keep-alive tick (up to 500 ms; 315-496 ms measured for half of
// the calls). 40 calls in a row take milliseconds each (before: about 10 s in all).
TEST_F(TlsConnectionTest, SameCaWithToken_RepliesDoNotWaitForTheNextKeepAlive) {
  Start(FilesOf(Dir("a"), "leader"), FilesOf(Dir("a"), "worker"), "job-token-0123456789");
  ASSERT_THAT(Connect(), IsOk());
  ASSERT_THAT(agent_->InsertKeyValue("config/lr", "0.01"), IsOk());
  absl::Time start = absl::Now();
  for (int i = 0; i < 40; ++i) {
    auto value = agent_->TryGetKeyValue("config/lr");
    ASSERT_THAT(value.status(), IsOk());
    EXPECT_EQ(*value, "0.01");
  }
  absl::Duration took = absl::Now() - start;
  EXPECT_LT(took, absl::Seconds(2)) << "40 calls took " << took;
  EXPECT_THAT(agent_->Shutdown(), IsOk());
}

// A plain worker cannot tell a TLS leader's refusal from a leader out of descriptors: it fails
// at once when it does not wait for its leader, and tries until its timeout when it does.
TEST_F(TlsConnectionTest, PlainWorker_GetsNothing) {
  Start(FilesOf(Dir("a"), "leader"), {});
  absl::Time start = absl::Now();
  EXPECT_THAT(
      Connect(absl::Seconds(30), /*wait_for_leader=*/false),
      StatusIs(Code::kUnavailable, AllOf(HasSubstr("closed the connection before its handshake"),
                                         HasSubstr("both sides use TLS"))));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  EXPECT_THAT(Connect(absl::Milliseconds(1500)),
              StatusIs(Code::kDeadlineExceeded, HasSubstr("both sides use TLS")));
}

TEST_F(TlsConnectionTest, WorkerOfAnotherCa_GetsNothingAtOnce) {
  Start(FilesOf(Dir("a"), "leader"), FilesOf(Dir("b"), "worker"));
  absl::Time start = absl::Now();
  EXPECT_THAT(Connect(), StatusIs(Code::kUnavailable, HasSubstr("same CA")));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

TEST_F(TlsConnectionTest, TlsWorkerOfPlainLeader_GetsNothingAtOnce) {
  Start({}, FilesOf(Dir("a"), "worker"));
  absl::Time start = absl::Now();
  EXPECT_THAT(Connect(), StatusIs(Code::kUnavailable, HasSubstr("both sides use TLS")));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

TEST_F(TlsConnectionTest, UnusableFiles_LeaderAndAgentRefuseToStart) {
  TlsFiles mismatched = FilesOf(Dir("a"), "leader");
  mismatched.key = Dir("a") + "/worker.key";
  NodeConfig config(WithTls({}, mismatched));
  caf::actor_system system{config};
  EXPECT_THAT(Leader::Start(system, OneWorkerJob()).status(),
              StatusIs(Code::kInvalidArgument, HasSubstr("does not match")));
  EXPECT_THAT(Agent::Create(system, AgentOptions{}, nullptr).status(),
              StatusIs(Code::kInvalidArgument, HasSubstr("does not match")));
}

}  // namespace
}  // namespace muster

namespace muster {
namespace {

using peer_identity_atom = caf::atom_constant<caf::atom("peerident")>;

// Per-task certificates between real nodes: a task's own certificate registers it; the
// command's certificate cannot, and no message from another node can claim a certificate for
// it (only the gate itself tells the gate who a connection is).
TEST_F(TlsConnectionTest, TaskCertificates_OnlyTheTasksOwnRegistersAndNoPeerCanClaimOne) {
  const std::string dir = Dir("bind");
  std::filesystem::remove_all(dir);
  ASSERT_THAT(WriteJobCertificates(dir, {"leader", "cli"}, 30, {{"worker", 1}}), IsOk());
  Start(FilesOf(dir, "leader"), FilesOf(dir, "cli"));
  auto published =
      worker_system_->middleman().remote_actor<CoordinatorActor>("127.0.0.1", leader_->port());
  ASSERT_TRUE(published) << worker_system_->render(published.error());
  auto gate = caf::actor_cast<caf::actor>(*published);
  {
    caf::scoped_actor self{*worker_system_};
    for (bool anonymous : {false, true}) {
      auto claim = caf::make_message(peer_identity_atom::value, worker_system_->node(),
                                     static_cast<int32_t>(CertificateIdentity::Kind::kTask),
                                     std::string("/job:worker/task:0"), true);
      if (anonymous) {
        caf::anon_send(gate, claim);
      } else {
        self->send(gate, claim);
      }
    }
  }
  EXPECT_THAT(
      Connect(absl::Seconds(5)),
      StatusIs(Code::kPermissionDenied, AllOf(HasSubstr("acting as task /job:worker/task:0"),
                                              HasSubstr("the muster command's certificate"))));
  agent_.reset();
  worker_system_.reset();
  worker_config_ =
      std::make_unique<NodeConfig>(WithTls(WorkerNodeOptions(), {.cert = dir + "/task-worker-0.pem",
                                                                 .key = dir + "/task-worker-0.key",
                                                                 .ca = dir + "/ca.pem"}));
  worker_system_ = std::make_unique<caf::actor_system>(*worker_config_);
  ASSERT_THAT(Connect(), IsOk());
  EXPECT_THAT(agent_->InsertKeyValue("config/lr", "0.01"), IsOk());
  EXPECT_THAT(agent_->Shutdown(), IsOk());
}

}  // namespace
}  // namespace muster
