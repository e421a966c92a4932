// LeaderSessionMachine: the steps of a session with the leader for each plan (token or not,
// a task to register or not, waiting for a lost leader or not), and Backoff's delays.
#include "muster/net/agent/session/leader_session_machine.h"

#include <chrono>

#include <gtest/gtest.h>

namespace muster {
namespace {

using namespace std::chrono_literals;
using State = SessionState;

TEST(LeaderSessionMachineTest, NoTokenNoTask_RunningOnceConnected) {
  LeaderSessionMachine session;
  EXPECT_EQ(session.Start(), State::kConnecting);
  EXPECT_EQ(session.Connected(), State::kRunning);
  EXPECT_TRUE(session.authenticated() == false);
}

TEST(LeaderSessionMachineTest, Token_AuthenticatesBeforeRunning) {
  LeaderSessionMachine session({.authenticate = true});
  session.Start();
  EXPECT_EQ(session.Connected(), State::kAuthenticating);
  EXPECT_FALSE(session.authenticated());
  EXPECT_EQ(session.Authenticated(), State::kRunning);
  EXPECT_TRUE(session.authenticated());
}

TEST(LeaderSessionMachineTest, StandbyReached_RedirectedBackToConnectingThenOn) {
  LeaderSessionMachine session({.authenticate = true, .register_task = true});
  session.Start();
  EXPECT_EQ(session.Connected(), State::kAuthenticating);
  EXPECT_EQ(session.Redirected(), State::kConnecting);
  EXPECT_FALSE(session.authenticated());
  EXPECT_EQ(session.Connected(), State::kAuthenticating);
  EXPECT_EQ(session.Authenticated(), State::kRegistering);
  // Only AUTHENTICATING is redirected.
  EXPECT_EQ(session.Redirected(), State::kRegistering);
}

TEST(LeaderSessionMachineTest, StandbyReachedWhileReconnecting_StaysReconnecting) {
  LeaderSessionMachine agent({.authenticate = true, .register_task = true, .reconnect = true});
  agent.Start();
  agent.Connected();
  agent.Authenticated();
  agent.Registered();
  EXPECT_EQ(agent.LeaderLost(), State::kReconnecting);
  EXPECT_EQ(agent.Connected(), State::kAuthenticating);
  EXPECT_EQ(agent.Redirected(), State::kReconnecting);
  EXPECT_TRUE(agent.reconnecting());
}

TEST(LeaderSessionMachineTest, LeaderKnown_StartsAtTheStepAfterConnecting) {
  LeaderSessionMachine with_token({.authenticate = true});
  EXPECT_EQ(with_token.Start(/*leader_known=*/true), State::kAuthenticating);
  LeaderSessionMachine without({.register_task = true});
  EXPECT_EQ(without.Start(/*leader_known=*/true), State::kRegistering);
}

TEST(LeaderSessionMachineTest, Agent_ConnectsAuthenticatesRegistersRuns) {
  LeaderSessionMachine agent({.authenticate = true, .register_task = true});
  agent.Start();
  EXPECT_EQ(agent.Connected(), State::kAuthenticating);
  EXPECT_EQ(agent.Authenticated(), State::kRegistering);
  EXPECT_EQ(agent.Registered(), State::kRunning);
  EXPECT_FALSE(agent.reconnecting());
}

TEST(LeaderSessionMachineTest, LeaderLostWhileRunning_ReconnectsWhenThePlanAllows) {
  LeaderSessionMachine agent({.authenticate = true, .register_task = true, .reconnect = true});
  agent.Start();
  agent.Connected();
  agent.Authenticated();
  agent.Registered();
  EXPECT_EQ(agent.LeaderLost(), State::kReconnecting);
  EXPECT_TRUE(agent.reconnecting());
  EXPECT_FALSE(agent.authenticated());  // a new connection proves the token again
  EXPECT_EQ(agent.Connected(), State::kAuthenticating);
  EXPECT_TRUE(agent.reconnecting());
  EXPECT_EQ(agent.Authenticated(), State::kRegistering);
  // Lost again before registering: still waiting for it.
  EXPECT_EQ(agent.LeaderLost(), State::kReconnecting);
  agent.Connected();
  agent.Authenticated();
  EXPECT_EQ(agent.Registered(), State::kRunning);
  EXPECT_FALSE(agent.reconnecting());
}

TEST(LeaderSessionMachineTest, LeaderLost_StopsWithoutReconnectOrBeforeRunning) {
  LeaderSessionMachine no_wait({.register_task = true});
  no_wait.Start();
  no_wait.Connected();
  no_wait.Registered();
  EXPECT_EQ(no_wait.LeaderLost(), State::kStopped);
  LeaderSessionMachine connecting({.register_task = true, .reconnect = true});
  connecting.Start();
  connecting.Connected();
  EXPECT_EQ(connecting.LeaderLost(), State::kStopped);  // never ran: nothing to wait for
}

TEST(LeaderSessionMachineTest, EventsOutOfTurn_ChangeNothing) {
  LeaderSessionMachine session({.authenticate = true, .register_task = true});
  session.Start();
  EXPECT_EQ(session.Authenticated(), State::kConnecting);
  EXPECT_EQ(session.Registered(), State::kConnecting);
  session.Connected();
  EXPECT_EQ(session.Connected(), State::kAuthenticating);
  EXPECT_EQ(session.Registered(), State::kAuthenticating);
}

TEST(LeaderSessionMachineTest, Stop_FromAnyStateAndForGood) {
  LeaderSessionMachine session({.authenticate = true, .reconnect = true});
  session.Start();
  session.Connected();
  session.Authenticated();
  EXPECT_EQ(session.Stop(), State::kStopped);
  EXPECT_FALSE(session.authenticated());
  EXPECT_EQ(session.LeaderLost(), State::kStopped);
  EXPECT_EQ(session.Connected(), State::kStopped);
  EXPECT_EQ(session.Start(), State::kConnecting);  // a new session
}

TEST(LeaderSessionMachineTest, StateNames) {
  EXPECT_STREQ(SessionStateName(State::kConnecting), "CONNECTING");
  EXPECT_STREQ(SessionStateName(State::kAuthenticating), "AUTHENTICATING");
  EXPECT_STREQ(SessionStateName(State::kRegistering), "REGISTERING");
  EXPECT_STREQ(SessionStateName(State::kRunning), "RUNNING");
  EXPECT_STREQ(SessionStateName(State::kReconnecting), "RECONNECTING");
  EXPECT_STREQ(SessionStateName(State::kStopped), "STOPPED");
}

TEST(BackoffTest, DoublesUpToTheMaximum_NeverPastTheTimeLeft) {
  Backoff backoff(20ms, 100ms);
  EXPECT_EQ(backoff.Next(1s), 20ms);
  EXPECT_EQ(backoff.Next(1s), 40ms);
  EXPECT_EQ(backoff.Next(1s), 80ms);
  EXPECT_EQ(backoff.Next(1s), 100ms);
  EXPECT_EQ(backoff.Next(1s), 100ms);
  EXPECT_EQ(backoff.Next(30ms), 30ms);
}

TEST(BackoffTest, ShouldRetry_OnlyWhatMayHealWithTimeLeft) {
  EXPECT_TRUE(ShouldRetry(true, 1ms));
  EXPECT_FALSE(ShouldRetry(true, 0ms));
  EXPECT_FALSE(ShouldRetry(true, -1ms));
  EXPECT_FALSE(ShouldRetry(false, 1s));
}

}  // namespace
}  // namespace muster
