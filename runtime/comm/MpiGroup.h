//===- MpiGroup.h - the process group and host collectives ---- -*- C++ -*-===//
//
// libsluice_comm.so: MpiGroup is the ProcessGroup of runtime/core/Comm.h
// (MPI initialized if the program did not, its own duplicate of the job's
// communicator); MpiComm is a cpu context's RankComm, the ABI's collectives
// on host buffers (their layouts are in include/sluice/bundle_abi.h).
//
// Algorithms: direct exchanges between every pair of ranks (MpiTransport.h
// says why). all_reduce is a reduce-scatter (each rank sums its block of
// every rank's buffer, in rank order) then an all-gather of the sums: the
// bytes a ring moves, one round trip per phase, and every rank ends with
// the same bits. Strided blocks (all_gather and reduce_scatter with
// outer > 1) travel as MPI vector types, not through copies.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_RUNTIME_COMM_MPIGROUP_H
#define SLUICE_RUNTIME_COMM_MPIGROUP_H

#include "runtime/core/Comm.h"

#include <mpi.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

namespace sluice::runtime::comm {

/// What a group and the communicators it made share: once anything failed
/// midway, no MPI call that needs every rank (MPI_Comm_free,
/// MPI_Finalize) is made again.
struct JobState {
  std::atomic<bool> broken{false};
};

class MpiComm final : public RankComm {
public:
  MpiComm(MPI_Comm comm, double timeoutSeconds, std::shared_ptr<JobState> job);
  ~MpiComm() override;
  MpiComm(const MpiComm &) = delete;
  MpiComm &operator=(const MpiComm &) = delete;

  const SluiceComm *comm() const override { return &table; }
  const std::string &transport() const override;
  bool splitAxis(int32_t axis, int32_t color, int32_t key, uint64_t maxBytes,
                 std::string &error) override;

  /// Scratch for collectives of up to `maxBytes`, allocated now so that runs
  /// do not allocate.
  bool reserve(uint64_t maxBytes, std::string &error);

  /// The ABI's collectives (bundle_abi.h), on host buffers; false with
  /// `error` naming the rank at fault. Only all_reduce may run in place
  /// (send == recv).
  bool allReduce(const void *send, void *recv, size_t count, int32_t dtype,
                 std::string &error);
  bool allGather(const void *send, void *recv, size_t outer, size_t inner,
                 int32_t dtype, std::string &error);
  bool reduceScatter(const void *send, void *recv, size_t outer, size_t inner,
                     int32_t dtype, std::string &error);
  bool allToAll(const void *send, void *recv, size_t count, int32_t dtype,
                std::string &error);
  bool sendTo(const void *buf, size_t count, int32_t dtype, int32_t peer,
              std::string &error);
  bool recvFrom(void *buf, size_t count, int32_t dtype, int32_t peer,
                std::string &error);
  bool broadcast(void *buf, size_t count, int32_t dtype, int32_t root,
                 std::string &error);

private:
  /// The tag of the next collective: every rank calls the same collectives
  /// in the same order, so their counters agree; a rank that skipped one
  /// then times out instead of mixing two collectives' data.
  int collectiveTag();
  /// Point-to-point calls involve two ranks only: counted per peer and
  /// direction, in tags of their own.
  int pointTag(std::vector<uint32_t> &counters, int32_t peer);
  unsigned char *scratchFor(size_t bytes);
  /// False (and the job broken) with `error` prefixed by `what`.
  bool failed(const char *what, std::string &error);

  MPI_Comm mpiComm;
  int rank = 0, world = 1;
  double timeout;
  std::shared_ptr<JobState> job;
  SluiceComm table = {};
  uint32_t collectives = 0;
  std::vector<uint32_t> sent, received;
  std::vector<unsigned char> scratch;
  /// The grid axes' communicators (splitAxis), by SluiceMeshAxis.
  std::unique_ptr<MpiComm> axisComms[SLUICE_MESH_AXES];
};

class MpiGroup final : public ProcessGroup {
public:
  /// Initializes MPI unless it is, duplicates `*base` (null: the world).
  static std::unique_ptr<MpiGroup> create(const MPI_Comm *base,
                                          std::string &error);
  ~MpiGroup() override;

  int32_t rank() const override { return rank_; }
  int32_t worldSize() const override { return world_; }
  int32_t localRank() const override { return localRank_; }
  int32_t localSize() const override { return localSize_; }
  double timeoutSeconds() const override { return timeout; }
  bool threadMultiple() const override { return multiple; }
  bool broadcast(void *data, size_t bytes, int32_t root,
                 std::string &error) override;
  bool allGather(const void *data, size_t bytes, void *out,
                 std::string &error) override;
  bool createHostComm(uint64_t maxBytes, std::unique_ptr<RankComm> &out,
                      std::string &error) override;
  bool broken() const override { return job->broken; }
  bool shutdown(std::string &error) override;

private:
  MpiGroup() = default;
  int nextTag() { return 1 + (int)(operations++ % 30000); }

  MPI_Comm comm = MPI_COMM_NULL;
  int32_t rank_ = 0, world_ = 1, localRank_ = 0, localSize_ = 1;
  double timeout = 0;
  bool ownsMpi = false;  ///< this group initialized MPI and finalizes it
  bool multiple = false; ///< MPI_THREAD_MULTIPLE provided
  bool shutDown = false;
  uint32_t operations = 0;
  std::shared_ptr<JobState> job = std::make_shared<JobState>();
};

} // namespace sluice::runtime::comm

#endif // SLUICE_RUNTIME_COMM_MPIGROUP_H
