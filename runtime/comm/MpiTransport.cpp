//===- MpiTransport.cpp - point-to-point exchanges with a deadline --------===//

#include "runtime/comm/MpiTransport.h"

#include "runtime/comm/Deadline.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <sched.h>
#include <thread>
#include <time.h>

namespace sluice::runtime::comm {

bool readTimeout(double &seconds, std::string &error) {
  seconds = kDefaultTimeoutSeconds;
  const char *text = std::getenv("SLUICE_COMM_TIMEOUT");
  if (!text || !*text)
    return true;
  char *end = nullptr;
  double value = std::strtod(text, &end);
  if (*end || !(value > 0) || !std::isfinite(value)) {
    error = std::string("SLUICE_COMM_TIMEOUT='") + text +
            "' is not a number of seconds > 0";
    return false;
  }
  seconds = value;
  return true;
}

std::string secondsText(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%g s", seconds);
  return text;
}

namespace {

using PauseClock = std::chrono::steady_clock;

int64_t nanoseconds(PauseClock::time_point at) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             at.time_since_epoch())
      .count();
}

/// A watcher thread sees pauses wherever the rank was (in a kernel, between
/// collectives, or inside one): all threads of a stopped process stop, so
/// its ticks, every 100 ms, show a gap of more than kPauseGap. `watchTickNs`
/// is its last tick; `lastResumeNs` when it last saw the process resume and
/// `lastPauseNs` for how long it was paused; nanoseconds of PauseClock, 0:
/// never.
std::atomic<int64_t> watchTickNs{0}, lastResumeNs{0}, lastPauseNs{0};

void startPauseWatch() {
  static std::once_flag once;
  std::call_once(once, [] {
    watchTickNs = nanoseconds(PauseClock::now());
    std::thread([] {
      PauseClock::time_point last = PauseClock::now();
      for (;;) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        PauseClock::time_point now = PauseClock::now();
        if (now - last > kPauseGap) {
          lastPauseNs =
              std::chrono::duration_cast<std::chrono::nanoseconds>(now - last)
                  .count();
          lastResumeNs = nanoseconds(now);
        }
        watchTickNs = nanoseconds(now);
        last = now;
      }
    }).detach();
  });
}

/// The pause this process resumed from within the last `window` before
/// `now`, in seconds (0: none). After a resume the waiting thread may run
/// before the watcher: a last tick older than kPauseGap is a pause the
/// watcher has not recorded yet, which ended at the latest at `now`.
double recentPause(PauseClock::time_point now, PauseClock::duration window) {
  int64_t tick = watchTickNs.load();
  if (!tick)
    return 0;
  std::chrono::nanoseconds unrecorded(nanoseconds(now) - tick);
  if (unrecorded > kPauseGap)
    return unrecorded.count() * 1e-9;
  int64_t resumed = lastResumeNs.load();
  if (!resumed)
    return 0;
  std::chrono::nanoseconds since(nanoseconds(now) - resumed);
  return since <= window ? lastPauseNs.load() * 1e-9 : 0;
}

} // namespace

std::string mpiMessage(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
    return "MPI error " + std::to_string(code);
  return std::string(text, length);
}

Exchange::~Exchange() {
  // Requests still pending belong to a failed exchange: the communicator is
  // broken and the process on its way out, and freeing a pending receive
  // would let MPI write into memory the caller reuses. Leave them.
}

bool Exchange::post(bool isSend, void *data, size_t bytes, MPI_Datatype type,
                    int count, int peer, std::string &error) {
  MPI_Request request;
  int status = isSend ? MPI_Isend(data, count, type, peer, tag, comm, &request)
                      : MPI_Irecv(data, count, type, peer, tag, comm, &request);
  if (status != MPI_SUCCESS) {
    error = std::string(isSend ? "MPI_Isend" : "MPI_Irecv") + " of " +
            std::to_string(bytes) + " bytes " + (isSend ? "to" : "from") +
            " rank " + std::to_string(peer) + " failed: " + mpiMessage(status);
    return false;
  }
  requests.push_back(request);
  peers.push_back(peer);
  return true;
}

/// MPI counts are ints: a message beyond 1 GiB goes as several, which MPI
/// keeps in order between one pair of ranks on one tag.
bool Exchange::postBytes(bool isSend, void *data, size_t bytes, int peer,
                         std::string &error) {
  constexpr size_t kMaxMessage = size_t(1) << 30;
  auto *bytePointer = static_cast<unsigned char *>(data);
  for (size_t offset = 0; offset < bytes; offset += kMaxMessage) {
    size_t n = std::min(kMaxMessage, bytes - offset);
    if (!post(isSend, bytePointer + offset, n, MPI_BYTE, (int)n, peer, error))
      return false;
  }
  return true;
}

bool Exchange::postStrided(bool isSend, void *data, size_t blockBytes,
                           size_t blocks, size_t strideBytes, int peer,
                           std::string &error) {
  if (blocks == 1 || blockBytes == strideBytes)
    return postBytes(isSend, data, blockBytes * blocks, peer, error);
  if (blockBytes == 0 || blocks == 0)
    return true;
  auto *bytePointer = static_cast<unsigned char *>(data);
  // One message of a vector type when its sizes fit MPI's ints (always,
  // short of 2 GiB blocks); else one message per block.
  if (blocks <= INT_MAX && blockBytes <= INT_MAX && strideBytes <= INT_MAX) {
    MPI_Datatype vector;
    int status = MPI_Type_vector((int)blocks, (int)blockBytes, (int)strideBytes,
                                 MPI_BYTE, &vector);
    if (status == MPI_SUCCESS)
      status = MPI_Type_commit(&vector);
    if (status != MPI_SUCCESS) {
      error = "MPI_Type_vector failed: " + mpiMessage(status);
      return false;
    }
    bool ok = post(isSend, data, blockBytes * blocks, vector, 1, peer, error);
    // A type may be freed while messages that use it are pending.
    MPI_Type_free(&vector);
    return ok;
  }
  for (size_t b = 0; b < blocks; ++b)
    if (!postBytes(isSend, bytePointer + b * strideBytes, blockBytes, peer,
                   error))
      return false;
  return true;
}

bool Exchange::send(const void *data, size_t bytes, int peer,
                    std::string &error) {
  return postBytes(true, const_cast<void *>(data), bytes, peer, error);
}

bool Exchange::recv(void *data, size_t bytes, int peer, std::string &error) {
  return postBytes(false, data, bytes, peer, error);
}

bool Exchange::sendStrided(const void *data, size_t blockBytes, size_t blocks,
                           size_t strideBytes, int peer, std::string &error) {
  return postStrided(true, const_cast<void *>(data), blockBytes, blocks,
                     strideBytes, peer, error);
}

bool Exchange::recvStrided(void *data, size_t blockBytes, size_t blocks,
                           size_t strideBytes, int peer, std::string &error) {
  return postStrided(false, data, blockBytes, blocks, strideBytes, peer, error);
}

namespace {

/// "rank 1" or "ranks 1, 3".
std::string rankList(const std::vector<int> &ranks) {
  std::string text = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i)
    text += (i ? ", " : "") + std::to_string(ranks[i]);
  return text;
}

} // namespace

bool Exchange::wait(const char *what, std::string &error) {
  using Clock = PollDeadline::Clock;
  size_t pending = requests.size();
  std::vector<int> indices(requests.size());
  std::vector<MPI_Status> statuses(requests.size());
  startPauseWatch();
  // One reading of the clock per poll, taken after MPI_Testsome, excuses
  // this rank's own pauses and then judges the deadline (Deadline.h): a
  // rank resumed after SIGSTOP must not blame the others for its pause.
  PollDeadline deadline(timeout, Clock::now());
  for (unsigned polls = 0; pending > 0; ++polls) {
    int done = 0;
    int status = MPI_Testsome((int)requests.size(), requests.data(), &done,
                              indices.data(), statuses.data());
    if (status != MPI_SUCCESS) {
      // MPI_ERR_IN_STATUS: the statuses of the completed requests say which.
      std::vector<int> lost;
      std::string why = mpiMessage(status);
      for (int i = 0; i < done; ++i)
        if (statuses[i].MPI_ERROR != MPI_SUCCESS) {
          lost.push_back(peers[indices[i]]);
          why = mpiMessage(statuses[i].MPI_ERROR);
        }
      error = std::string(what) + ": " +
              (lost.empty() ? std::string("MPI failed")
                            : "lost " + rankList(lost)) +
              ": " + why;
      return false;
    }
    if (done == MPI_UNDEFINED) // no active request left
      break;
    deadline.look(Clock::now());
    if (done > 0) {
      pending -= (size_t)done;
      deadline.progress();
      polls = 0;
      continue;
    }
    if (deadline.passed()) {
      // A peer may own several pending requests; list it once.
      std::vector<int> silent;
      for (size_t i = 0; i < requests.size(); ++i)
        if (requests[i] != MPI_REQUEST_NULL &&
            std::find(silent.begin(), silent.end(), peers[i]) == silent.end())
          silent.push_back(peers[i]);
      // A rank that was itself paused, in this wait since the last message
      // or shortly before (within two timeouts: the others waited one on
      // it, then this one waited one on them), was the silent one: they
      // have most likely timed out on it and are gone. Say so instead of
      // blaming them.
      auto window = std::chrono::duration_cast<Clock::duration>(
          std::chrono::duration<double>(2 * timeout + 1));
      double paused =
          std::max(std::chrono::duration<double>(deadline.paused()).count(),
                   recentPause(deadline.now(), window));
      if (paused > 0) {
        error = std::string(what) + ": this rank was paused for " +
                secondsText(std::round(paused * 10) / 10) +
                " (stopped, or starved of a core), and after it resumed " +
                rankList(silent) + " stayed silent for " +
                secondsText(timeout) + ": they have likely given up on it";
        return false;
      }
      error = std::string(what) + ": no answer from " + rankList(silent) +
              " within " + secondsText(timeout);
      return false;
    }
    // Spin briefly (a collective between ranks in step answers within
    // microseconds), then give the core away: ranks may outnumber cores.
    if (polls < 64)
      continue;
    if (polls < 1024) {
      sched_yield();
      continue;
    }
    timespec pause = {0, 100 * 1000};
    nanosleep(&pause, nullptr);
  }
  requests.clear();
  peers.clear();
  return true;
}

} // namespace sluice::runtime::comm
