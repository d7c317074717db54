//===- Deadline.h - a polling deadline that excuses pauses ------*- C++ -*-===//
//
// Every wait on another rank polls with a deadline: the timeout without
// progress after which the silent peer is blamed. Time this process did not
// run (stopped by SIGSTOP, or starved of a core) is no peer's fault, so it
// must not count towards the deadline; but no clock stops while a process
// is stopped (CLOCK_MONOTONIC and CLOCK_BOOTTIME both run on; only CPU-time
// clocks stop, and they also stop while the loop sleeps, so they cannot
// measure a peer's silence). What the loop can see is a gap between two of
// its own readings of the monotonic clock: the loop reads it at least every
// few milliseconds while it runs, so a gap much longer than that is time it
// did not run.
//
// The rule that makes this race-free: each poll reads the clock once, and
// that one reading first excuses any gap since the previous reading, then
// decides whether the deadline passed. A pause, wherever it falls in the
// loop (inside MPI_Testsome, between two statements), lies between two
// readings, and is excused by the reading that ends it before that reading
// is compared with the deadline. (Reading the clock once for the gap and
// again for the deadline left a window: a process stopped between the two
// woke up past its deadline, and blamed a peer for its own pause.)
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_RUNTIME_COMM_DEADLINE_H
#define SLUICE_RUNTIME_COMM_DEADLINE_H

#include <chrono>

namespace sluice::runtime::comm {

/// A gap longer than this between two readings of one polling loop is a
/// pause of the process. A running loop reads the clock every few
/// milliseconds at most (its polls sleep well under a millisecond), so half a
/// second is far beyond scheduling noise, and far below any useful timeout.
constexpr std::chrono::milliseconds kPauseGap{500};

/// The deadline of one polling loop, in readings of the steady clock that
/// the loop takes itself, one per poll: look(), then progress() or
/// passed().
class PollDeadline {
public:
  using Clock = std::chrono::steady_clock;

  PollDeadline(double timeoutSeconds, Clock::time_point start)
      : timeout(std::chrono::duration_cast<Clock::duration>(
            std::chrono::duration<double>(timeoutSeconds))),
        last(start), deadline(start + timeout) {}

  /// Takes this poll's reading: a gap over kPauseGap since the previous
  /// one was a pause, and moves the deadline by its length.
  void look(Clock::time_point now) {
    Clock::duration gap = now - last;
    if (gap > kPauseGap) {
      deadline += gap;
      pausedFor += gap;
    }
    last = now;
  }

  /// A message arrived: the deadline restarts from this poll's reading (a
  /// slow peer is not at fault, one silent for the whole timeout is), and
  /// the pauses before it are forgotten (the peers outlasted them).
  void progress() {
    deadline = last + timeout;
    pausedFor = Clock::duration(0);
  }

  /// Whether this poll's reading is past the deadline.
  bool passed() const { return last > deadline; }

  /// The pauses this loop excused since the last progress, in all.
  Clock::duration paused() const { return pausedFor; }

  /// This poll's reading.
  Clock::time_point now() const { return last; }

private:
  Clock::duration timeout;
  Clock::time_point last;
  Clock::time_point deadline;
  Clock::duration pausedFor{0};
};

} // namespace sluice::runtime::comm

#endif // SLUICE_RUNTIME_COMM_DEADLINE_H
