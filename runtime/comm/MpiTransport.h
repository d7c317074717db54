//===- MpiTransport.h - messages with a deadline -------------- -*- C++ -*-===//
//
// Every host collective of libsluice_comm.so is built from nonblocking
// MPI_Isend / MPI_Irecv posted all at once and then polled: no blocking MPI
// call, so a rank that died or hangs costs the others one timeout, not the
// job. The collectives exchange directly between every pair of ranks (no
// ring), so the ranks whose messages did not arrive are exactly the ones at
// fault and the message can name them.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_RUNTIME_COMM_MPITRANSPORT_H
#define SLUICE_RUNTIME_COMM_MPITRANSPORT_H

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace sluice::runtime::comm {

/// The default of SLUICE_COMM_TIMEOUT: well under the 30 seconds within
/// which the job must end when a rank dies or hangs, well over the skew
/// between ranks of one run.
constexpr double kDefaultTimeoutSeconds = 10;

/// SLUICE_COMM_TIMEOUT in seconds (> 0), or the default; false with `error`
/// set when it is not a positive number.
bool readTimeout(double &seconds, std::string &error);

/// "10 s", "2.5 s".
std::string secondsText(double seconds);

/// The messages of one operation on one communicator: post them, then wait
/// for all of them at once.
class Exchange {
public:
  Exchange(MPI_Comm comm, int tag, double timeoutSeconds)
      : comm(comm), tag(tag), timeout(timeoutSeconds) {}
  ~Exchange();
  Exchange(const Exchange &) = delete;
  Exchange &operator=(const Exchange &) = delete;

  /// `bytes` at `data` to or from rank `peer` (nothing for 0 bytes).
  bool send(const void *data, size_t bytes, int peer, std::string &error);
  bool recv(void *data, size_t bytes, int peer, std::string &error);
  /// `blocks` blocks of `blockBytes`, `strideBytes` apart.
  bool sendStrided(const void *data, size_t blockBytes, size_t blocks,
                   size_t strideBytes, int peer, std::string &error);
  bool recvStrided(void *data, size_t blockBytes, size_t blocks,
                   size_t strideBytes, int peer, std::string &error);

  /// Polls until every message is done. Fails when none completed for the
  /// timeout ("WHAT: no answer from rank 1 within 10 s"; time this process
  /// was paused does not count, Deadline.h) or MPI reports an error ("WHAT:
  /// lost rank 1: ..."); the pending requests are then left to the broken
  /// communicator.
  bool wait(const char *what, std::string &error);

private:
  bool post(bool isSend, void *data, size_t bytes, MPI_Datatype type, int count,
            int peer, std::string &error);
  bool postBytes(bool isSend, void *data, size_t bytes, int peer,
                 std::string &error);
  bool postStrided(bool isSend, void *data, size_t blockBytes, size_t blocks,
                   size_t strideBytes, int peer, std::string &error);

  MPI_Comm comm;
  int tag;
  double timeout;
  std::vector<MPI_Request> requests;
  std::vector<int> peers; ///< the rank each request waits on
};

/// MPI's message for error code `code`.
std::string mpiMessage(int code);

} // namespace sluice::runtime::comm

#endif // SLUICE_RUNTIME_COMM_MPITRANSPORT_H
