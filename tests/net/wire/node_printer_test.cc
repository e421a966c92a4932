// A node's actor system puts CAF's printer on its scheduler (actors/caf/scheduled_printer.h):
// aout still prints, and the system still ends (the scheduler stops the printer while its
// workers run).
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <caf/actor_ostream.hpp>
#include <caf/actor_system.hpp>
#include <caf/blocking_actor.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/scoped_actor.hpp>

#include "muster/net/transport/node_config.h"

namespace muster {
namespace {

// A node's actor system (its own threads): aout output reaches the file the printer was
// redirected to, and the system ends (its scheduler stops the printer while its workers run).
TEST(NodePrinterTest, AoutInANodeSystem_PrintedAndTheSystemEnds) {
  const std::string path = ::testing::TempDir() + "/scheduled_printer_node";
  std::remove(path.c_str());
  {
    NodeConfig config;
    caf::actor_system system{config};
    // Not CAF's own (a detached blocking actor: a thread of its own).
    caf::actor printer = system.scheduler().printer();
    ASSERT_TRUE(printer);
    EXPECT_EQ(dynamic_cast<caf::blocking_actor*>(caf::actor_cast<caf::abstract_actor*>(printer)),
              nullptr);
    caf::actor_ostream::redirect_all(system, path);
    caf::scoped_actor self{system};
    caf::aout(self) << "from aout" << std::endl;
    self->spawn([](caf::event_based_actor* actor) { caf::aout(actor) << "from an actor\n"; });
  }
  std::ifstream in(path);
  std::stringstream read;
  read << in.rdbuf();
  std::string text = read.str();
  EXPECT_NE(text.find("from aout\n"), std::string::npos) << text;
  EXPECT_NE(text.find("from an actor\n"), std::string::npos) << text;
}

}  // namespace
}  // namespace muster
