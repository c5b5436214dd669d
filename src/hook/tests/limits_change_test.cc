// Unit tests of the decision on a replaced limits file (limits_change.c, issue 36): which new
// versions a running process applies, and what it says about those it refuses.
#include <string>

#include <gtest/gtest.h>

extern "C" {
#include "hook/limits_change.h"
}

namespace {

// `body` as a whole limits file: followed by its end marker.
std::string Whole(const std::string& body) {
  return body + "end=" + std::to_string(body.size()) + "\n";
}

// What the node agent wrote when the container started: two devices, a memory limit with spill,
// an elastic compute limit with a ceiling.
constexpr char kStarted[] =
    "version=2\nmode=elastic\ndevices=2\nuuid.0=GPU-aaaa\nuuid.1=GPU-bbbb\nmemory.0=4Gi\n"
    "spill.0=1Gi\ncores.0=30\nceiling.0=60\nmemory.1=0\ncores.1=0\nregion=/run/r/region\n";

hook_limits Parse(const std::string& body) {
  hook_limits limits;
  hook_limits_parse_file(Whole(body).c_str(), "/run/limits", &limits);
  return limits;
}

// `from` with the first occurrence of `what` replaced by `with`.
std::string Replace(std::string from, const std::string& what, const std::string& with) {
  size_t at = from.find(what);
  EXPECT_NE(at, std::string::npos) << what;
  return at == std::string::npos ? from : from.replace(at, what.size(), with);
}

TEST(LimitsChange, DecidesWhatARunningProcessApplies) {
  const hook_limits current = Parse(kStarted);
  ASSERT_FALSE(current.error) << current.message;
  const std::string started = kStarted;
  struct Case {
    std::string body;
    limits_change want;
    std::string says;  // in the refusal's message ("" when applied or unchanged)
  } cases[] = {
      // The same limits, rewritten (another inode, a comment): nothing to do.
      {started, LIMITS_SAME, ""},
      {"# rewritten\n" + started, LIMITS_SAME, ""},
      {Replace(started, "memory.0=4Gi", "memory.0=4294967296"), LIMITS_SAME, ""},
      // What may change: memory, spill, cores and ceiling of any device, up or down.
      {Replace(started, "memory.0=4Gi", "memory.0=8Gi"), LIMITS_APPLY, ""},
      {Replace(started, "memory.0=4Gi", "memory.0=2Gi"), LIMITS_APPLY, ""},
      {Replace(started, "spill.0=1Gi\n", ""), LIMITS_APPLY, ""},
      {Replace(started, "cores.0=30", "cores.0=45"), LIMITS_APPLY, ""},
      {Replace(started, "ceiling.0=60", "ceiling.0=80"), LIMITS_APPLY, ""},
      {Replace(started, "memory.1=0", "memory.1=1Gi"), LIMITS_APPLY, ""},
      {Replace(started, "cores.1=0", "cores.1=20"), LIMITS_APPLY, ""},
      // What describes the container may not change.
      {Replace(started, "mode=elastic", "mode=hard"), LIMITS_REFUSE,
       "/run/limits: mode=hard, but the process started with mode=elastic (a running "
       "container's limits file may change memory.<i>, spill.<i>, cores.<i> and ceiling.<i> "
       "only)"},
      {Replace(started, "devices=2", "devices=3") + "memory.2=0\ncores.2=0\n", LIMITS_REFUSE,
       "devices=3, but the process started with devices=2"},
      {Replace(started, "uuid.1=GPU-bbbb", "uuid.1=GPU-cccc"), LIMITS_REFUSE,
       "uuid.1=GPU-cccc, but the process started with uuid.1=GPU-bbbb"},
      {Replace(started, "uuid.1=GPU-bbbb\n", ""), LIMITS_REFUSE,
       "uuid.1=(none), but the process started with uuid.1=GPU-bbbb"},
      {Replace(started, "region=/run/r/region", "region=/run/other"), LIMITS_REFUSE,
       "region=/run/other, but the process started with region=/run/r/region"},
      {Replace(started, "region=/run/r/region\n", ""), LIMITS_REFUSE,
       "region=/tmp/tessera-cuda.region, but the process started with region=/run/r/region"},
      // A file that does not parse: its parser's message, which names the line and what is
      // allowed.
      {Replace(started, "cores.0=30", "cores.0=300"), LIMITS_REFUSE,
       "/run/limits line 8: cores=\"300\" (allowed: a percent 0 to 100"},
      {Replace(started, "memory.1=0\n", ""), LIMITS_REFUSE, "memory.1 is missing"},
      {Replace(started, "ceiling.0=60", "ceiling.0=20"), LIMITS_REFUSE,
       "ceiling.0 is below cores.0"},
  };
  for (const Case& c : cases) {
    const hook_limits next = Parse(c.body);
    char why[1024];
    EXPECT_EQ(limits_change_decide(&current, &next, why, sizeof(why)), c.want) << c.body;
    if (c.says.empty()) {
      EXPECT_STREQ(why, "") << c.body;
    } else {
      EXPECT_NE(std::string(why).find(c.says), std::string::npos) << c.body << " -> " << why;
    }
  }
}

// A file that could not be read at all (gone, a FIFO) is refused with the reader's message.
TEST(LimitsChange, AFileThatCannotBeReadIsRefusedWithTheReadersMessage) {
  const hook_limits current = Parse(kStarted);
  hook_limits next;
  char buffer[4096];
  EXPECT_EQ(hook_limits_read_file("/nonexistent/tessera/limits", buffer, sizeof(buffer), &next),
            -1);
  char why[1024];
  EXPECT_EQ(limits_change_decide(&current, &next, why, sizeof(why)), LIMITS_REFUSE);
  EXPECT_NE(std::string(why).find("cannot read limits file /nonexistent/tessera/limits"),
            std::string::npos)
      << why;
}

// A long message is cut, never overflowed, and still names the source.
TEST(LimitsChange, ARefusalFitsTheCallersBuffer) {
  const hook_limits current = Parse(kStarted);
  const hook_limits next = Parse(Replace(kStarted, "mode=elastic", "mode=hard"));
  char why[24];
  EXPECT_EQ(limits_change_decide(&current, &next, why, sizeof(why)), LIMITS_REFUSE);
  EXPECT_EQ(std::string(why), "limits file /run/limits");
}

}  // namespace
