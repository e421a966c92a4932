// A real etcd cluster for tests: `members` etcd processes (Debian's etcd-server) on free
// loopback ports, or one on each of some hosts of a test bed (ports 2379 and 2380 there), each
// with its own data dir under a fresh temporary directory, removed with the cluster. Members can
// be killed and started again, as a test of etcd's failures needs.
#pragma once

#include <unistd.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <absl/status/statusor.h>
#include <absl/strings/str_cat.h>
#include <absl/time/time.h>

#include <gtest/gtest.h>

#include "muster/net/ha/etcd/etcd_client.h"
#include "muster/net/ha/etcd/etcd_grpc_member.h"
#include "muster/tools/run/subprocess.h"

namespace muster::testing {

class EtcdCluster {
 public:
  // Starts the members and waits (up to `timeout`) until the cluster answers a linearizable
  // read, i.e. has elected its leader. Possible errors: Unavailable (etcd is not installed, or
  // the cluster did not form in time; with the members' logs).
  static absl::StatusOr<std::unique_ptr<EtcdCluster>> Start(
      int members = 3, absl::Duration timeout = absl::Seconds(20));

  // A cluster that serves clients over TLS only (https://, certificates of a CA made for it
  // with openssl, naming 127.0.0.1; a client certificate required), and, with `user`, with
  // etcd's authentication on: user "root", password kPassword, simple tokens that expire after
  // `token_ttl` unused. security() is what a client gives.
  static constexpr char kPassword[] = "muster-test-pw";
  static absl::StatusOr<std::unique_ptr<EtcdCluster>> StartSecure(
      int members, bool user, absl::Duration token_ttl = absl::Seconds(300),
      absl::Duration timeout = absl::Seconds(20));
  // TLS and the user of a cluster of StartSecure (none for Start's).
  const EtcdSecurity& security() const { return security_; }
  // The file of the cluster's CA and its client certificate and key, for etcdctl.
  std::vector<std::string> EtcdctlSecurityFlags() const;

  // Members on other hosts: member i listens on hosts[i] and runs as in(i, argv) runs it (e.g.
  // NetBed::In). The test process need not reach them: whether the cluster formed is asked with
  // etcdctl, run as in(0, ...) runs it.
  struct Placement {
    std::vector<std::string> hosts;
    std::function<std::vector<std::string>(int, std::vector<std::string>)> in;
  };
  static absl::StatusOr<std::unique_ptr<EtcdCluster>> StartOn(
      Placement placement, absl::Duration timeout = absl::Seconds(20));
  ~EtcdCluster();

  // "127.0.0.1:P0,127.0.0.1:P1,..." (the client endpoints).
  std::string endpoints() const;
  std::string endpoint(int member) const;
  // A member that is not etcd's raft leader now (asked with etcdctl); -1 when none answered.
  int Follower() const;
  // Kills member `i` (SIGKILL) and waits until it is gone.
  void Kill(int member);
  // Starts member `i` again on its data dir and ports.
  absl::Status Restart(int member);
  // The end of a member's log, for failure messages.
  std::string LogTail(int member) const;
  // Every member's LogTail, each under its name.
  std::string LogTails() const;
  // A client of the whole cluster, over gRPC unless `member` says otherwise
  // (NewEtcdGatewayMember: through etcd's JSON gateway).
  absl::StatusOr<std::shared_ptr<EtcdClient>> Client(
      EtcdMemberFactory member = NewEtcdGrpcMember) const;

 private:
  struct Member {
    std::string name;
    std::string host = "127.0.0.1";
    int client_port = 0;
    int peer_port = 0;
    std::unique_ptr<Subprocess> process;
  };
  EtcdCluster() = default;
  static absl::StatusOr<std::unique_ptr<EtcdCluster>> StartSecure(int members, bool user,
                                                                  absl::Duration token_ttl,
                                                                  absl::Duration timeout, bool tls);
  // One try of StartSecure, on ports free when chosen.
  static absl::StatusOr<std::unique_ptr<EtcdCluster>> StartOnFreePorts(int members, bool user,
                                                                       absl::Duration token_ttl,
                                                                       absl::Duration timeout,
                                                                       bool tls);
  // A cluster of `members` (their data dirs under a fresh temporary directory), each started.
  static absl::StatusOr<std::unique_ptr<EtcdCluster>> Launch(std::vector<Member> members,
                                                             Placement placement, bool tls = false,
                                                             absl::Duration token_ttl = {});
  // Writes the CA, the members' and the client's certificates into dir_ (openssl).
  absl::Status MakeCertificates();
  // Runs etcdctl against the cluster with `args`; its output on failure.
  absl::Status Etcdctl(std::vector<std::string> args) const;
  absl::Status Launch(int member);
  // Waits until a linearizable request of etcdctl succeeds (placed members).
  absl::Status WaitFormed(absl::Duration timeout) const;

  std::string dir_;
  EtcdSecurity security_;
  absl::Duration token_ttl_;
  std::string initial_cluster_;
  std::vector<Member> members_;
  Placement placement_;
};

// A fresh cluster for each test, and a client of it.
class EtcdTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto cluster = EtcdCluster::Start();
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    cluster_ = *std::move(cluster);
    auto client = cluster_->Client();
    ASSERT_TRUE(client.ok()) << client.status();
    etcd_ = *std::move(client);
  }

  std::unique_ptr<EtcdCluster> cluster_;
  std::shared_ptr<EtcdClient> etcd_;
};

// One cluster for a whole suite (started in SetUpTestSuite), a client of it for each test, and
// a name of the test's own for what it keeps in etcd (distinct under --gtest_repeat).
class SharedEtcdTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto cluster = EtcdCluster::Start();
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    cluster_ = cluster->release();
  }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }
  void SetUp() override {
    ASSERT_NE(cluster_, nullptr);
    auto client = cluster_->Client();
    ASSERT_TRUE(client.ok()) << client.status();
    etcd_ = *std::move(client);
    static int run = 0;
    name_ = absl::StrCat(::testing::UnitTest::GetInstance()->current_test_info()->name(), "-",
                         getpid(), "-", run++);
  }

  inline static EtcdCluster* cluster_ = nullptr;
  std::shared_ptr<EtcdClient> etcd_;
  std::string name_;
};

}  // namespace muster::testing
