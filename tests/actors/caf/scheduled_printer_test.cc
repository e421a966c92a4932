// The printer that takes CAF's place on a node's scheduler: lines print as they complete, a
// flush or the actor's end prints the rest, redirects send output to files.
#include "muster/actors/caf/scheduled_printer.h"

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <caf/send.hpp>
#include <caf/type_id.hpp>

#include "tests/testing/deterministic_fixture.h"

namespace muster {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class ScheduledPrinterTest : public testing::DeterministicTest {
 protected:
  caf::actor Printer() {
    return Keep(system_.spawn(ScheduledPrinter,
                              [this](const std::string& text) { printed_.push_back(text); }));
  }
  std::string TempFile(const std::string& name) {
    return ::testing::TempDir() + "/scheduled_printer_" + name;
  }

  std::vector<std::string> printed_;
};

TEST_F(ScheduledPrinterTest, Add_PrintsLinesAsTheyComplete_EachActorItsOwn) {
  caf::actor printer = Printer();
  caf::anon_send(printer, caf::add_atom::value, caf::actor_id{5}, std::string("hel"));
  caf::anon_send(printer, caf::add_atom::value, caf::actor_id{6}, std::string("other "));
  caf::anon_send(printer, caf::add_atom::value, caf::actor_id{5}, std::string("lo\n"));
  Drain();
  EXPECT_THAT(printed_, ElementsAre("hello\n"));
  caf::anon_send(printer, caf::add_atom::value, caf::actor_id{6}, std::string("line\n"));
  Drain();
  EXPECT_THAT(printed_, ElementsAre("hello\n", "other line\n"));
}

TEST_F(ScheduledPrinterTest, FlushAndDelete_PrintAnUnfinishedLine) {
  caf::actor printer = Printer();
  caf::anon_send(printer, caf::add_atom::value, caf::actor_id{5}, std::string("half"));
  caf::anon_send(printer, caf::add_atom::value, caf::actor_id{6}, std::string("gone"));
  Drain();
  EXPECT_THAT(printed_, IsEmpty());
  caf::anon_send(printer, caf::flush_atom::value, caf::actor_id{5});
  caf::anon_send(printer, caf::delete_atom::value, caf::actor_id{6});
  caf::anon_send(printer, caf::flush_atom::value, caf::actor_id{7});  // nothing of 7
  Drain();
  EXPECT_THAT(printed_, ElementsAre("half", "gone"));
}

TEST_F(ScheduledPrinterTest, Exit_PrintsWhatIsLeft) {
  caf::actor printer = Printer();
  caf::anon_send(printer, caf::add_atom::value, caf::actor_id{5}, std::string("no newline"));
  Drain();
  caf::anon_send_exit(printer, caf::exit_reason::user_shutdown);
  Drain();
  EXPECT_THAT(printed_, ElementsAre("no newline"));
}

TEST_F(ScheduledPrinterTest, Redirects_ToFilesOfEveryActorOrOne_UnopenableStaysOnTheSink) {
  const std::string all = TempFile("all");
  const std::string own = TempFile("own");
  std::remove(all.c_str());
  std::remove(own.c_str());
  caf::actor printer = Printer();
  caf::anon_send(printer, caf::redirect_atom::value, all, 0);
  caf::anon_send(printer, caf::redirect_atom::value, caf::actor_id{6}, own, 0);
  caf::anon_send(printer, caf::redirect_atom::value, caf::actor_id{7},
                 std::string("/nonexistent-dir/x"), 0);
  caf::anon_send(printer, caf::add_atom::value, caf::actor_id{5}, std::string("to all\n"));
  caf::anon_send(printer, caf::add_atom::value, caf::actor_id{6}, std::string("to own\n"));
  caf::anon_send(printer, caf::add_atom::value, caf::actor_id{7}, std::string("to all too\n"));
  Drain();
  EXPECT_THAT(printed_, IsEmpty());
  EXPECT_EQ(ReadFile(all), "to all\nto all too\n");
  EXPECT_EQ(ReadFile(own), "to own\n");
  caf::anon_send(printer, caf::redirect_atom::value, std::string(), 0);  // back to the sink
  caf::anon_send(printer, caf::add_atom::value, caf::actor_id{5}, std::string("sink\n"));
  Drain();
  EXPECT_THAT(printed_, ElementsAre("sink\n"));
}

}  // namespace
}  // namespace muster
