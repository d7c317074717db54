//===- CommDeadlineTest.cpp - the polling deadline that excuses pauses ----===//
//
// runtime/comm/Deadline.h on made-up readings of the clock: what a polling
// loop concludes from each. The real thing, a rank stopped with SIGSTOP and
// resumed while its peer still waits, is check_ranks.py's resumed-rank.
//
//===----------------------------------------------------------------------===//

#include "runtime/comm/Deadline.h"

#include <gtest/gtest.h>

#include <chrono>

using namespace sluice::runtime::comm;
using Clock = PollDeadline::Clock;
using std::chrono::milliseconds;

namespace {

/// A reading `ms` milliseconds after a fixed start.
Clock::time_point at(int ms) { return Clock::time_point() + milliseconds(ms); }

/// Polls every millisecond from `fromMs` to `toMs` (inclusive) with no
/// progress; the reading at which the deadline passed, or -1.
int pollUntilPassed(PollDeadline &deadline, int fromMs, int toMs) {
  for (int ms = fromMs; ms <= toMs; ++ms) {
    deadline.look(at(ms));
    if (deadline.passed())
      return ms;
  }
  return -1;
}

} // namespace

TEST(CommDeadline, PassesAfterTheTimeoutOfSilence) {
  PollDeadline deadline(3, at(0));
  EXPECT_EQ(pollUntilPassed(deadline, 1, 10000), 3001);
  EXPECT_EQ(deadline.paused(), Clock::duration(0));
}

TEST(CommDeadline, ProgressRestartsItFromThatPoll) {
  PollDeadline deadline(3, at(0));
  EXPECT_EQ(pollUntilPassed(deadline, 1, 2500), -1);
  deadline.progress(); // a message arrived at the reading of 2500 ms
  EXPECT_EQ(pollUntilPassed(deadline, 2501, 10000), 5501);
}

// The race of the mpi-stopped-rank flake: the process is stopped after a
// poll read the clock and resumed past its deadline. The first reading
// after the resume excuses the gap before it is judged, so the peer gets
// its whole timeout after the resume.
TEST(CommDeadline, APauseIsExcusedByTheReadingThatEndsIt) {
  PollDeadline deadline(3, at(0));
  EXPECT_EQ(pollUntilPassed(deadline, 1, 1000), -1);
  deadline.look(at(5000)); // stopped for 4 s, one second past the deadline
  EXPECT_FALSE(deadline.passed());
  EXPECT_EQ(deadline.paused(), milliseconds(4000));
  EXPECT_EQ(deadline.now(), at(5000));
  // What was left of the timeout before the pause (2 s) is left after it.
  EXPECT_EQ(pollUntilPassed(deadline, 5001, 20000), 7001);
}

// Pauses since the last message add up; a message forgets those before it
// (the peers outlasted them).
TEST(CommDeadline, PausesAddUpUntilProgress) {
  PollDeadline deadline(1, at(0));
  deadline.look(at(2000));
  EXPECT_EQ(deadline.paused(), milliseconds(2000));
  deadline.progress();
  EXPECT_EQ(deadline.paused(), Clock::duration(0));
  deadline.look(at(2100));
  deadline.look(at(4100));
  deadline.look(at(4200));
  deadline.look(at(5200));
  EXPECT_FALSE(deadline.passed());
  EXPECT_EQ(deadline.paused(), milliseconds(3000));
  // 1 s of silence that was not a pause, in all, since the message.
  deadline.look(at(5600));
  deadline.look(at(6000));
  EXPECT_FALSE(deadline.passed());
  deadline.look(at(6001));
  EXPECT_TRUE(deadline.passed());
  EXPECT_EQ(deadline.paused(), milliseconds(3000));
}

// A gap of at most kPauseGap is the loop being slow, not paused: it counts
// towards the deadline, so a peer that is really gone is still named.
TEST(CommDeadline, AShortGapCounts) {
  PollDeadline deadline(1, at(0));
  int gap = (int)kPauseGap.count();
  deadline.look(at(gap));
  deadline.look(at(2 * gap));
  EXPECT_FALSE(deadline.passed()); // exactly at the deadline
  deadline.look(at(3 * gap));
  EXPECT_TRUE(deadline.passed());
  EXPECT_EQ(deadline.paused(), Clock::duration(0));
  // One millisecond more is a pause.
  PollDeadline paused(1, at(0));
  paused.look(at(gap + 1));
  paused.look(at(2 * gap + 2));
  paused.look(at(3 * gap + 3));
  EXPECT_FALSE(paused.passed());
  EXPECT_EQ(paused.paused(), milliseconds(3 * gap + 3));
}

// A fractional timeout keeps its fraction.
TEST(CommDeadline, FractionalTimeout) {
  PollDeadline deadline(1.5, at(0));
  EXPECT_EQ(pollUntilPassed(deadline, 1, 10000), 1501);
}
