//===- CudaComm.cpp - a cuda context's collectives: NCCL or host-staged ---===//
//
// libsluice_comm_cuda.so: the RankComm of a cuda context of a multi-rank
// job, on device buffers, every call only enqueued on the run's stream (the
// run may be captured into a CUDA graph: no synchronize, no cudaMalloc).
//
// NCCL when every rank has a GPU of its own: cudaSetDevice(local rank) was
// done by the context, the unique id goes from rank 0 to all over MPI (the
// ProcessGroup), the communicator is nonblocking so that a rank that does
// not arrive costs a timeout (then ncclCommAbort), not a hang.
//
// NCCL refuses two ranks on one GPU, which is how a one-GPU machine runs a
// --tp=2 bundle: then each collective is staged through pinned host memory
// (device to host copy, the MPI collective of libsluice_comm.so in a stream
// host function, host to device copy), all three enqueued, so that graphs
// capture them too. The ranks choose by exchanging (host, PCI bus id) of
// their devices; SLUICE_COMM_TRANSPORT=nccl|staged forces one.
//
// This library links the CUDA runtime and NCCL but not MPI: what it needs
// of MPI it reaches through the ProcessGroup (runtime/core/Comm.h).
//
//===----------------------------------------------------------------------===//

#include "runtime/comm/Deadline.h"
#include "runtime/comm/Reduce.h"
#include "runtime/core/Comm.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <thread>
#include <unistd.h>
#include <vector>

namespace sluice::runtime::comm {

namespace {

std::string cudaMessage(cudaError_t status) {
  return std::string(cudaGetErrorString(status)) + " (" +
         cudaGetErrorName(status) + ")";
}

int32_t report(bool ok, const std::string &error, char *out, size_t size) {
  if (ok)
    return 0;
  if (out && size)
    std::snprintf(out, size, "%s", error.c_str());
  return 1;
}

/// Bytes a collective reads from `send` and writes to `recv` (ABI layouts).
struct Sizes {
  size_t send = 0, recv = 0;
};

enum class Op {
  AllReduce,
  AllGather,
  ReduceScatter,
  AllToAll,
  Send,
  Recv,
  Broadcast
};

const char *opName(Op op) {
  switch (op) {
  case Op::AllReduce:
    return "all_reduce";
  case Op::AllGather:
    return "all_gather";
  case Op::ReduceScatter:
    return "reduce_scatter";
  case Op::AllToAll:
    return "all_to_all";
  case Op::Send:
    return "send";
  case Op::Recv:
    return "recv";
  case Op::Broadcast:
    return "broadcast";
  }
  return "?";
}

/// One collective's arguments: count for all_reduce, all_to_all, send,
/// recv and broadcast; outer and inner for all_gather and reduce_scatter;
/// peer is the root of a broadcast.
struct Args {
  Op op;
  size_t count = 0, outer = 0, inner = 0;
  int32_t dtype = 0, peer = 0;
};

Sizes sizesOf(const Args &args, int32_t world) {
  size_t es = dtypeBytes(args.dtype), w = (size_t)world;
  switch (args.op) {
  case Op::AllReduce:
  case Op::Broadcast:
    return {args.count * es, args.count * es};
  case Op::AllGather:
    return {args.outer * args.inner * es, args.outer * w * args.inner * es};
  case Op::ReduceScatter:
    return {args.outer * w * args.inner * es, args.outer * args.inner * es};
  case Op::AllToAll:
    return {w * args.count * es, w * args.count * es};
  case Op::Send:
    return {args.count * es, 0};
  case Op::Recv:
    return {0, args.count * es};
  }
  return {};
}

//===----------------------------------------------------------------------===//
// The ABI table, shared by both transports
//===----------------------------------------------------------------------===//

/// What both transports implement: one enqueued collective.
class DeviceComm : public RankComm {
public:
  const SluiceComm *comm() const override { return &table; }
  virtual bool enqueue(const Args &args, const void *send, void *recv,
                       cudaStream_t stream, std::string &error) = 0;

protected:
  void fillTable(int32_t rank, int32_t world) {
    table.state = this;
    table.rank = rank;
    table.world_size = world;
    table.all_reduce = [](void *state, const void *send, void *recv,
                          size_t count, int32_t dtype, void *stream,
                          char *error, size_t size) {
      Args args{Op::AllReduce, count, 0, 0, dtype, 0};
      return call(state, args, send, recv, stream, error, size);
    };
    table.all_gather = [](void *state, const void *send, void *recv,
                          size_t outer, size_t inner, int32_t dtype,
                          void *stream, char *error, size_t size) {
      Args args{Op::AllGather, 0, outer, inner, dtype, 0};
      return call(state, args, send, recv, stream, error, size);
    };
    table.reduce_scatter = [](void *state, const void *send, void *recv,
                              size_t outer, size_t inner, int32_t dtype,
                              void *stream, char *error, size_t size) {
      Args args{Op::ReduceScatter, 0, outer, inner, dtype, 0};
      return call(state, args, send, recv, stream, error, size);
    };
    table.all_to_all = [](void *state, const void *send, void *recv,
                          size_t count, int32_t dtype, void *stream,
                          char *error, size_t size) {
      Args args{Op::AllToAll, count, 0, 0, dtype, 0};
      return call(state, args, send, recv, stream, error, size);
    };
    table.send = [](void *state, const void *buf, size_t count, int32_t dtype,
                    int32_t peer, void *stream, char *error, size_t size) {
      Args args{Op::Send, count, 0, 0, dtype, peer};
      return call(state, args, buf, nullptr, stream, error, size);
    };
    table.recv = [](void *state, void *buf, size_t count, int32_t dtype,
                    int32_t peer, void *stream, char *error, size_t size) {
      Args args{Op::Recv, count, 0, 0, dtype, peer};
      return call(state, args, nullptr, buf, stream, error, size);
    };
    table.broadcast = [](void *state, void *buf, size_t count, int32_t dtype,
                         int32_t root, void *stream, char *error, size_t size) {
      Args args{Op::Broadcast, count, 0, 0, dtype, root};
      return call(state, args, buf, buf, stream, error, size);
    };
  }

  SluiceComm table = {};

private:
  static int32_t call(void *state, const Args &args, const void *send,
                      void *recv, void *stream, char *error, size_t size) {
    auto *self = static_cast<DeviceComm *>(state);
    std::string why;
    bool ok;
    if (!dtypeBytes(args.dtype)) {
      why = std::string(opName(args.op)) + ": unknown element type " +
            std::to_string(args.dtype);
      ok = false;
    } else if ((args.op == Op::Send || args.op == Op::Recv ||
                args.op == Op::Broadcast) &&
               (args.peer < 0 || args.peer >= self->table.world_size ||
                (args.op != Op::Broadcast && args.peer == self->table.rank))) {
      why = std::string(opName(args.op)) + ": no peer rank " +
            std::to_string(args.peer);
      ok = false;
    } else {
      ok = self->enqueue(args, send, recv, static_cast<cudaStream_t>(stream),
                         why);
    }
    return report(ok, why, error, size);
  }
};

//===----------------------------------------------------------------------===//
// MPI staged through pinned host memory
//===----------------------------------------------------------------------===//

class StagedComm final : public DeviceComm {
public:
  ~StagedComm() override {
    (void)cudaFreeHost(stageSend);
    (void)cudaFreeHost(stageRecv);
  }

  bool init(ProcessGroup &group, uint64_t maxBytes, std::string &error) {
    if (!group.threadMultiple()) {
      error = "ranks that share a GPU stage their collectives through MPI "
              "calls on CUDA's callback thread, which needs MPI initialized "
              "with MPI_THREAD_MULTIPLE (the program initialized it with "
              "less)";
      return false;
    }
    if (!group.createHostComm(maxBytes, host, error))
      return false;
    return initOn(host->comm(), maxBytes, error);
  }

  /// Staging buffers of `maxBytes` for collectives on the host
  /// communicator `table` (the job's, or one grid axis's).
  bool initOn(const SluiceComm *hostComm, uint64_t maxBytes, std::string &error) {
    hostTable = hostComm;
    capacity = (size_t)maxBytes;
    size_t bytes = std::max<size_t>(capacity, 64);
    cudaError_t status = cudaHostAlloc(reinterpret_cast<void **>(&stageSend),
                                       bytes, cudaHostAllocDefault);
    if (status == cudaSuccess)
      status = cudaHostAlloc(reinterpret_cast<void **>(&stageRecv), bytes,
                             cudaHostAllocDefault);
    if (status != cudaSuccess) {
      error = "cudaHostAlloc of the collective staging buffers (2 x " +
              std::to_string(capacity) +
              " bytes) failed: " + cudaMessage(status);
      return false;
    }
    fillTable(hostTable->rank, hostTable->world_size);
    return true;
  }

  const std::string &transport() const override {
    static const std::string name =
        "mpi, staged through pinned host memory (ranks share a GPU)";
    return name;
  }

  /// A grid axis: the host communicator's split (MPI_Comm_split), staged
  /// through buffers of its own.
  bool splitAxis(int32_t axis, int32_t color, int32_t key, uint64_t maxBytes,
                 std::string &error) override {
    if (!host || !host->splitAxis(axis, color, key, maxBytes, error))
      return false;
    auto child = std::make_unique<StagedComm>();
    if (!child->initOn(host->comm()->axes[axis], maxBytes, error))
      return false;
    axisComms[axis] = std::move(child);
    table.axes[axis] = axisComms[axis]->comm();
    return true;
  }

  void beginRun() override {
    nextCall = 0;
    for (auto &child : axisComms)
      if (child)
        child->beginRun();
  }

  /// The first failure, at every run from then on: the job's communicator
  /// is broken and later collectives are skipped.
  std::string asyncError() override {
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (!firstError.empty())
        return firstError;
    }
    for (auto &child : axisComms)
      if (child)
        if (std::string error = child->asyncError(); !error.empty())
          return error;
    return "";
  }

  bool enqueue(const Args &args, const void *send, void *recv,
               cudaStream_t stream, std::string &error) override {
    Sizes sizes = sizesOf(args, table.world_size);
    if (sizes.send > capacity || sizes.recv > capacity) {
      error = std::string(opName(args.op)) + " of " +
              std::to_string(std::max(sizes.send, sizes.recv)) +
              " bytes exceeds the staging buffers (the manifest's "
              "collective_max_bytes, " +
              std::to_string(capacity) + ")";
      return false;
    }
    // A record per call of a run: a captured graph's host node keeps its
    // pointer and replays it, so records never move or change meaning.
    if (nextCall == calls.size())
      calls.push_back(std::make_unique<Call>());
    Call &call = *calls[nextCall++];
    call.self = this;
    call.args = args;
    // Broadcast runs in place on the receive staging.
    unsigned char *into = args.op == Op::Broadcast ? stageRecv : stageSend;
    cudaError_t status = cudaSuccess;
    if (sizes.send && (args.op != Op::Broadcast || table.rank == args.peer))
      status = cudaMemcpyAsync(into, send, sizes.send, cudaMemcpyDeviceToHost,
                               stream);
    if (status == cudaSuccess)
      status = cudaLaunchHostFunc(stream, &StagedComm::runCall, &call);
    if (status == cudaSuccess && sizes.recv)
      status = cudaMemcpyAsync(recv, stageRecv, sizes.recv,
                               cudaMemcpyHostToDevice, stream);
    if (status != cudaSuccess) {
      error = std::string(opName(args.op)) +
              ": enqueueing the host-staged collective failed: " +
              cudaMessage(status);
      return false;
    }
    return true;
  }

private:
  struct Call {
    StagedComm *self = nullptr;
    Args args{Op::AllReduce};
  };

  /// A stream host function: the MPI collective on the staging buffers.
  /// After a failure the rest of the run's collectives are skipped, so that
  /// the stream drains in one timeout, not one per collective.
  static void runCall(void *data) {
    Call &call = *static_cast<Call *>(data);
    StagedComm &self = *call.self;
    if (self.failed)
      return;
    const SluiceComm &host = *self.hostTable;
    const Args &args = call.args;
    char message[512] = {};
    int32_t status = 0;
    switch (args.op) {
    case Op::AllReduce:
      status = host.all_reduce(host.state, self.stageSend, self.stageRecv,
                               args.count, args.dtype, nullptr, message,
                               sizeof message);
      break;
    case Op::AllGather:
      status = host.all_gather(host.state, self.stageSend, self.stageRecv,
                               args.outer, args.inner, args.dtype, nullptr,
                               message, sizeof message);
      break;
    case Op::ReduceScatter:
      status = host.reduce_scatter(host.state, self.stageSend, self.stageRecv,
                                   args.outer, args.inner, args.dtype, nullptr,
                                   message, sizeof message);
      break;
    case Op::AllToAll:
      status = host.all_to_all(host.state, self.stageSend, self.stageRecv,
                               args.count, args.dtype, nullptr, message,
                               sizeof message);
      break;
    case Op::Send:
      status = host.send(host.state, self.stageSend, args.count, args.dtype,
                         args.peer, nullptr, message, sizeof message);
      break;
    case Op::Recv:
      status = host.recv(host.state, self.stageRecv, args.count, args.dtype,
                         args.peer, nullptr, message, sizeof message);
      break;
    case Op::Broadcast:
      status =
          host.broadcast(host.state, self.stageRecv, args.count, args.dtype,
                         args.peer, nullptr, message, sizeof message);
      break;
    }
    if (status != 0) {
      std::lock_guard<std::mutex> lock(self.mutex);
      if (self.firstError.empty())
        self.firstError = message[0] ? message : opName(args.op);
      self.failed = true;
    }
  }

  std::unique_ptr<RankComm> host; ///< libsluice_comm.so's MpiComm
  const SluiceComm *hostTable = nullptr; ///< host's, or one of its axes'
  std::unique_ptr<StagedComm> axisComms[SLUICE_MESH_AXES];
  unsigned char *stageSend = nullptr, *stageRecv = nullptr;
  size_t capacity = 0;
  std::vector<std::unique_ptr<Call>> calls;
  size_t nextCall = 0;
  std::mutex mutex;
  std::string firstError;
  std::atomic<bool> failed{false};
};

//===----------------------------------------------------------------------===//
// NCCL
//===----------------------------------------------------------------------===//

bool ncclTypeOf(int32_t dtype, ncclDataType_t &type) {
  switch (dtype) {
  case SLUICE_COMM_F32:
    type = ncclFloat32;
    return true;
  case SLUICE_COMM_F16:
    type = ncclFloat16;
    return true;
  case SLUICE_COMM_BF16:
    type = ncclBfloat16;
    return true;
  case SLUICE_COMM_F64:
    type = ncclFloat64;
    return true;
  case SLUICE_COMM_I32:
    type = ncclInt32;
    return true;
  case SLUICE_COMM_I64:
    type = ncclInt64;
    return true;
  case SLUICE_COMM_I8:
    type = ncclInt8;
    return true;
  case SLUICE_COMM_U8:
    type = ncclUint8;
    return true;
  default:
    return false;
  }
}

class NcclComm final : public DeviceComm {
public:
  ~NcclComm() override {
    if (comm) {
      // A communicator that failed or timed out cannot finalize (it would
      // wait for the missing rank): abort it.
      if (aborted ||
          !settle(ncclCommFinalize(comm), "ncclCommFinalize", ignored))
        (void)ncclCommAbort(comm);
      else
        (void)ncclCommDestroy(comm);
    }
    (void)cudaFree(scratch);
  }

  bool init(ProcessGroup &group, uint64_t maxBytes, std::string &error) {
    timeout = group.timeoutSeconds();
    int32_t rank = group.rank(), world = group.worldSize();
    // Rank 0 makes the id; a failure there travels with it, so that the
    // others fail too instead of waiting for a communicator.
    struct {
      int32_t ok;
      ncclUniqueId id;
    } shared = {};
    if (rank == 0)
      shared.ok = ncclGetUniqueId(&shared.id) == ncclSuccess;
    if (!group.broadcast(&shared, sizeof shared, 0, error)) {
      error = "sharing the NCCL id: " + error;
      return false;
    }
    if (!shared.ok) {
      error = "rank 0 could not create an NCCL id (ncclGetUniqueId)";
      return false;
    }
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0; // every call returns; we poll with a deadline
    ncclResult_t result =
        ncclCommInitRankConfig(&comm, world, shared.id, rank, &config);
    if (!settle(result, "ncclCommInitRankConfig", error))
      return false;
    // all_gather and reduce_scatter with outer > 1 permute through it.
    cudaError_t status =
        cudaMalloc(&scratch, std::max<uint64_t>(maxBytes, 256));
    if (status != cudaSuccess) {
      error = "cudaMalloc of the collective scratch (" +
              std::to_string(maxBytes) +
              " bytes) failed: " + cudaMessage(status);
      return false;
    }
    capacity = (size_t)maxBytes;
    fillTable(rank, world);
    return true;
  }

  const std::string &transport() const override {
    static const std::string name = "nccl";
    return name;
  }

  void abort() override {
    for (auto &child : axisComms)
      if (child)
        child->abort();
    if (comm && !aborted)
      (void)ncclCommAbort(comm);
    aborted = true;
    comm = nullptr;
  }

  /// A grid axis: ncclCommSplit of this communicator (the ranks with the
  /// same color, ranked by key), with scratch of its own.
  bool splitAxis(int32_t axis, int32_t color, int32_t key, uint64_t maxBytes,
                 std::string &error) override {
    auto child = std::make_unique<NcclComm>();
    child->timeout = timeout;
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ncclResult_t result = ncclCommSplit(comm, color, key, &child->comm, &config);
    if (!child->settle(result, "ncclCommSplit", error))
      return false;
    int rank = 0, count = 0;
    if (ncclCommUserRank(child->comm, &rank) != ncclSuccess ||
        ncclCommCount(child->comm, &count) != ncclSuccess) {
      error = "ncclCommSplit: cannot read the new communicator's rank and size";
      return false;
    }
    cudaError_t status = cudaMalloc(&child->scratch, std::max<uint64_t>(maxBytes, 256));
    if (status != cudaSuccess) {
      error = "cudaMalloc of an axis communicator's scratch failed: " + cudaMessage(status);
      return false;
    }
    child->capacity = (size_t)maxBytes;
    child->fillTable(rank, count);
    table.axes[axis] = &child->table;
    axisComms[axis] = std::move(child);
    return true;
  }

  bool enqueue(const Args &args, const void *send, void *recv,
               cudaStream_t stream, std::string &error) override {
    const char *what = opName(args.op);
    if (aborted) {
      error = std::string(what) + ": the NCCL communicator was aborted";
      return false;
    }
    ncclDataType_t type = ncclFloat32;
    if (!ncclTypeOf(args.dtype, type)) {
      error = std::string(what) + ": NCCL has no element type " +
              dtypeName(args.dtype);
      return false;
    }
    size_t es = dtypeBytes(args.dtype), world = (size_t)table.world_size;
    size_t row = args.inner * es;
    auto *scratchBytes = static_cast<unsigned char *>(scratch);
    switch (args.op) {
    case Op::AllReduce:
      return settle(
          ncclAllReduce(send, recv, args.count, type, ncclSum, comm, stream),
          what, error);
    case Op::AllGather: {
      if (args.outer <= 1)
        return settle(ncclAllGather(send, recv, args.outer * args.inner, type,
                                    comm, stream),
                      what, error);
      // NCCL gathers [W, outer, inner]; the ABI wants [outer, W, inner].
      if (!fits(args, error) ||
          !settle(ncclAllGather(send, scratch, args.outer * args.inner, type,
                                comm, stream),
                  what, error))
        return false;
      for (size_t r = 0; r < world; ++r)
        if (!copied(cudaMemcpy2DAsync(
                        static_cast<unsigned char *>(recv) + r * row,
                        world * row, scratchBytes + r * args.outer * row, row,
                        row, args.outer, cudaMemcpyDeviceToDevice, stream),
                    what, error))
          return false;
      return true;
    }
    case Op::ReduceScatter: {
      if (args.outer <= 1)
        return settle(ncclReduceScatter(send, recv, args.outer * args.inner,
                                        type, ncclSum, comm, stream),
                      what, error);
      // The ABI's [outer, W, inner] to NCCL's [W, outer, inner] first.
      if (!fits(args, error))
        return false;
      for (size_t r = 0; r < world; ++r)
        if (!copied(cudaMemcpy2DAsync(scratchBytes + r * args.outer * row, row,
                                      static_cast<const unsigned char *>(send) +
                                          r * row,
                                      world * row, row, args.outer,
                                      cudaMemcpyDeviceToDevice, stream),
                    what, error))
          return false;
      return settle(ncclReduceScatter(scratch, recv, args.outer * args.inner,
                                      type, ncclSum, comm, stream),
                    what, error);
    }
    case Op::AllToAll:
      return settle(ncclAlltoAll(send, recv, args.count, type, comm, stream),
                    what, error);
    case Op::Send:
      return settle(ncclSend(send, args.count, type, args.peer, comm, stream),
                    what, error);
    case Op::Recv:
      return settle(ncclRecv(recv, args.count, type, args.peer, comm, stream),
                    what, error);
    case Op::Broadcast:
      return settle(
          ncclBroadcast(send, recv, args.count, type, args.peer, comm, stream),
          what, error);
    }
    return false;
  }

private:
  bool fits(const Args &args, std::string &error) const {
    Sizes sizes = sizesOf(args, table.world_size);
    if (std::max(sizes.send, sizes.recv) <= capacity)
      return true;
    error = std::string(opName(args.op)) + " of " +
            std::to_string(std::max(sizes.send, sizes.recv)) +
            " bytes exceeds the collective scratch (the manifest's "
            "collective_max_bytes, " +
            std::to_string(capacity) + ")";
    return false;
  }

  bool copied(cudaError_t status, const char *what, std::string &error) {
    if (status == cudaSuccess)
      return true;
    error = std::string(what) +
            ": cudaMemcpy2DAsync failed: " + cudaMessage(status);
    return false;
  }

  /// A nonblocking communicator's call may return ncclInProgress: poll its
  /// state until it settles, at most the timeout (then abort it: a rank did
  /// not arrive).
  bool settle(ncclResult_t result, const char *what, std::string &error) {
    using Clock = PollDeadline::Clock;
    // Time this rank did not run (stopped, starved) is excused: one reading
    // per poll, after the query (Deadline.h).
    PollDeadline deadline(timeout, Clock::now());
    while (result == ncclInProgress && comm) {
      if (ncclCommGetAsyncError(comm, &result) != ncclSuccess)
        break;
      if (result != ncclInProgress)
        break;
      deadline.look(Clock::now());
      if (deadline.passed()) {
        error = std::string(what) + ": NCCL did not settle within " +
                std::to_string(timeout) +
                " s (a rank did not arrive); communicator aborted";
        abort();
        return false;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    if (result == ncclSuccess)
      return true;
    error = std::string(what) + ": " + ncclGetErrorString(result);
    if (comm) {
      const char *detail = ncclGetLastError(comm);
      if (detail && *detail)
        error += std::string(" (") + detail + ")";
    }
    return false;
  }

  ncclComm_t comm = nullptr;
  double timeout = 10;
  bool aborted = false;
  void *scratch = nullptr;
  size_t capacity = 0;
  std::string ignored;
  std::unique_ptr<NcclComm> axisComms[SLUICE_MESH_AXES];
};

//===----------------------------------------------------------------------===//
// Choosing the transport
//===----------------------------------------------------------------------===//

/// Where a rank's GPU is: two ranks with the same host and PCI bus id share
/// a GPU, which NCCL refuses.
struct DeviceSpot {
  char host[128];
  char busId[64];
};

bool ranksShareAGpu(ProcessGroup &group, int32_t device, bool &shared,
                    std::string &error) {
  DeviceSpot mine = {};
  ::gethostname(mine.host, sizeof mine.host - 1);
  cudaError_t status =
      cudaDeviceGetPCIBusId(mine.busId, sizeof mine.busId - 1, device);
  if (status != cudaSuccess) {
    error = "cudaDeviceGetPCIBusId failed: " + cudaMessage(status);
    return false;
  }
  std::vector<DeviceSpot> spots(group.worldSize());
  if (!group.allGather(&mine, sizeof mine, spots.data(), error)) {
    error = "exchanging the ranks' GPUs: " + error;
    return false;
  }
  shared = false;
  for (size_t a = 0; a < spots.size(); ++a)
    for (size_t b = a + 1; b < spots.size(); ++b)
      shared |= std::strcmp(spots[a].host, spots[b].host) == 0 &&
                std::strcmp(spots[a].busId, spots[b].busId) == 0;
  return true;
}

} // namespace

} // namespace sluice::runtime::comm

using sluice::runtime::ProcessGroup;
using sluice::runtime::RankComm;

/// libsluice_comm_cuda.so's one export (runtime/core/Comm.h).
extern "C" __attribute__((visibility("default"))) int32_t
sluice_comm_cuda_create(int32_t interface, ProcessGroup *group, int32_t device,
                        uint64_t maxBytes, RankComm **out, std::string *error) {
  using namespace sluice::runtime::comm;
  if (interface != sluice::runtime::kCommInterface) {
    *error = "libsluice_comm_cuda.so has interface " +
             std::to_string(sluice::runtime::kCommInterface) +
             ", the runtime " + std::to_string(interface) +
             " (install the libraries of one build)";
    return 1;
  }
  try {
    const char *forced = std::getenv("SLUICE_COMM_TRANSPORT");
    std::string choice = forced ? forced : "";
    if (!choice.empty() && choice != "nccl" && choice != "staged") {
      *error = "SLUICE_COMM_TRANSPORT='" + choice +
               "' (give nccl or staged, or leave it unset to choose)";
      return 1;
    }
    // Every rank sees the same exchange, so all choose alike.
    bool shared = false;
    if (!ranksShareAGpu(*group, device, shared, *error))
      return 1;
    bool staged = choice.empty() ? shared : choice == "staged";
    if (staged) {
      auto comm = std::make_unique<StagedComm>();
      if (!comm->init(*group, maxBytes, *error))
        return 1;
      *out = comm.release();
    } else {
      auto comm = std::make_unique<NcclComm>();
      if (!comm->init(*group, maxBytes, *error))
        return 1;
      *out = comm.release();
    }
    return 0;
  } catch (const std::bad_alloc &) {
    *error = "out of memory";
    return 1;
  }
}
