//===- Comm.h - what the core and the comm libraries share ---- -*- C++ -*-===//
//
// A multi-rank bundle's run calls collectives through the ABI's SluiceComm
// (include/sluice/bundle_abi.h). The runtime fills it from a communication
// library that libsluice_runtime.so dlopens only when a program starts a
// multi-rank job, so that a single-rank user links neither MPI nor NCCL:
//
//   libsluice_comm.so       (runtime/comm, links MPI): the ProcessGroup, the
//                           process's place in the job, and the RankComm of
//                           a cpu context (collectives on host buffers).
//   libsluice_comm_cuda.so  (runtime/comm, links the CUDA runtime and NCCL,
//                           not MPI): the RankComm of a cuda context, NCCL
//                           or, when ranks share a GPU, MPI staged through
//                           pinned host memory (through the ProcessGroup's
//                           host collectives).
//
// All three libraries are built together from this tree, so the interface
// is C++ (as for the cuda module, runtime/core/RunContext.h): each library
// exports one extern "C" factory that returns an object it allocated; the
// caller deletes it through its virtual destructor. kCommInterface guards
// against a library from another build.
//
// Every operation that waits on other ranks has a deadline (the
// SLUICE_COMM_TIMEOUT environment variable, in seconds): a rank that died or
// hangs makes it fail with a message naming that rank instead of hanging.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_RUNTIME_CORE_COMM_H
#define SLUICE_RUNTIME_CORE_COMM_H

#include "sluice/bundle_abi.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace sluice::runtime {

/// One context's communicator: the SluiceComm its bundle's runs call, on a
/// communicator of its own, so that two contexts never mix their messages.
class RankComm {
public:
  virtual ~RankComm() = default;
  /// What the bundle's run gets in SluiceRunArgs.comm.
  virtual const SluiceComm *comm() const = 0;
  /// "mpi", "nccl" or "mpi, staged through pinned host memory".
  virtual const std::string &transport() const = 0;
  /// cuda: called before each run is enqueued (host-staged collectives
  /// keep their arguments per call of a run, for CUDA graph replays).
  virtual void beginRun() {}
  /// cuda: after the run's stream finished (or did not in time), the first
  /// failure of a collective that ran asynchronously, naming the rank at
  /// fault; "" if none.
  virtual std::string asyncError() { return ""; }
  /// cuda: the run did not finish within the timeout: abort the device
  /// communicator so that its pending work ends and the stream can drain.
  virtual void abort() {}
  /// Makes the communicator of grid axis `axis` (SluiceMeshAxis): the
  /// ranks of this one with the same `color` (those that differ only in
  /// their coordinate on the axis), ranked by `key`; comm()->axes[axis]
  /// then points to it. Collective over this communicator's ranks, when
  /// the context is created.
  virtual bool splitAxis(int32_t axis, int32_t color, int32_t key, uint64_t maxBytes,
                         std::string &error) {
    error = "grid axes are not supported by the " + transport() + " transport";
    return false;
  }
};

/// This process's place in a multi-rank job: an MPI communicator with the
/// host-side operations the runtime and its callers need around runs.
class ProcessGroup {
public:
  virtual ~ProcessGroup() = default;
  virtual int32_t rank() const = 0;
  virtual int32_t worldSize() const = 0;
  /// The rank among the ranks on this host (the GPU a cuda rank uses).
  virtual int32_t localRank() const = 0;
  virtual int32_t localSize() const = 0;
  /// SLUICE_COMM_TIMEOUT, or the default.
  virtual double timeoutSeconds() const = 0;
  /// Whether MPI may be called from any thread (MPI_THREAD_MULTIPLE), as
  /// the host-staged cuda transport does from CUDA's callback thread.
  virtual bool threadMultiple() const = 0;

  /// Host bytes from rank `root` to every rank.
  virtual bool broadcast(void *data, size_t bytes, int32_t root,
                         std::string &error) = 0;
  /// Every rank's `bytes` at `data`, in rank order, into `out` (worldSize *
  /// bytes).
  virtual bool allGather(const void *data, size_t bytes, void *out,
                         std::string &error) = 0;
  /// A RankComm of its own for one cpu context (host buffers), with scratch
  /// for collectives of up to `maxBytes` allocated now. Collective: every
  /// rank creates its contexts in the same order.
  virtual bool createHostComm(uint64_t maxBytes, std::unique_ptr<RankComm> &out,
                              std::string &error) = 0;
  /// Whether an operation failed midway (a rank did not answer, MPI
  /// failed): the job cannot shut down cleanly and MPI is not finalized.
  virtual bool broken() const = 0;
  /// Waits (with the deadline) until every rank arrives, so that a rank
  /// that hangs cannot make MPI_Finalize hang; then the destructor may
  /// finalize MPI if the group initialized it.
  virtual bool shutdown(std::string &error) = 0;
};

/// Bumped whenever RankComm, ProcessGroup or the factories change.
/// 2: RankComm::splitAxis.
constexpr int32_t kCommInterface = 2;

/// The MPI library and its factory:
///   int32_t sluice_comm_create_group(int32_t interface, const void *mpiComm,
///                                    ProcessGroup **out, std::string *error);
/// `mpiComm` points to the caller's MPI_Comm (null: MPI_COMM_WORLD); MPI is
/// initialized (MPI_THREAD_MULTIPLE asked for) unless the program did. 0 on
/// success with *out set; nonzero with *error set.
constexpr const char *kCommLibraryFile = "libsluice_comm.so";
constexpr const char *kCommGroupFactory = "sluice_comm_create_group";
using CommGroupFactory = int32_t (*)(int32_t interface, const void *mpiComm,
                                     ProcessGroup **out, std::string *error);

/// The cuda library and its factory, called by a cuda context with its
/// device current:
///   int32_t sluice_comm_cuda_create(int32_t interface, ProcessGroup *group,
///       int32_t device, uint64_t maxBytes, RankComm **out,
///       std::string *error);
/// NCCL when every rank of the group has a GPU of its own, otherwise MPI
/// staged through pinned host buffers of `maxBytes` (the manifest's
/// collective_max_bytes); SLUICE_COMM_TRANSPORT=nccl|staged forces one.
/// Collective over the group.
constexpr const char *kCudaCommLibraryFile = "libsluice_comm_cuda.so";
constexpr const char *kCudaCommFactory = "sluice_comm_cuda_create";
using CudaCommFactory = int32_t (*)(int32_t interface, ProcessGroup *group,
                                    int32_t device, uint64_t maxBytes,
                                    RankComm **out, std::string *error);

/// Creates the process group through libsluice_comm.so (dlopened once, from
/// the folder of libsluice_runtime.so first, kept loaded); null with `error`
/// set if the library or MPI cannot be used.
std::unique_ptr<ProcessGroup> createProcessGroup(const void *mpiComm,
                                                 std::string &error);

/// libsluice_comm_cuda.so's factory (dlopened once); null with `error` set
/// if this runtime has none or it cannot be loaded.
CudaCommFactory cudaCommFactory(std::string &error);

} // namespace sluice::runtime

#endif // SLUICE_RUNTIME_CORE_COMM_H
