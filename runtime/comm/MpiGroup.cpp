//===- MpiGroup.cpp - the process group and host collectives over MPI -----===//

#include "runtime/comm/MpiGroup.h"
#include "runtime/comm/MpiTransport.h"
#include "runtime/comm/Reduce.h"

#include <cstdio>
#include <cstring>
#include <new>

namespace sluice::runtime::comm {

namespace {

/// Collective tags cycle in [1, 16000), point-to-point ones in [16000,
/// 32000): MPI promises tags up to 32767.
constexpr int kPointTagBase = 16000;
constexpr uint32_t kTagSpan = 15999;

/// Copies `error` into the ABI's buffer; the ABI's status.
int32_t report(bool ok, const std::string &error, char *out, size_t size) {
  if (ok)
    return 0;
  if (out && size)
    std::snprintf(out, size, "%s", error.c_str());
  return 1;
}

MpiComm *self(void *state) { return static_cast<MpiComm *>(state); }

} // namespace

//===----------------------------------------------------------------------===//
// MpiComm
//===----------------------------------------------------------------------===//

MpiComm::MpiComm(MPI_Comm comm, double timeoutSeconds,
                 std::shared_ptr<JobState> job)
    : mpiComm(comm), timeout(timeoutSeconds), job(std::move(job)) {
  MPI_Comm_rank(mpiComm, &rank);
  MPI_Comm_size(mpiComm, &world);
  sent.assign(world, 0);
  received.assign(world, 0);
  table.state = this;
  table.rank = rank;
  table.world_size = world;
  // The ABI's entry points: check the element type, run, copy the message.
  table.all_reduce = [](void *state, const void *send, void *recv, size_t count,
                        int32_t dtype, void *, char *error, size_t size) {
    std::string why;
    return report(self(state)->allReduce(send, recv, count, dtype, why), why,
                  error, size);
  };
  table.all_gather = [](void *state, const void *send, void *recv, size_t outer,
                        size_t inner, int32_t dtype, void *, char *error,
                        size_t size) {
    std::string why;
    return report(self(state)->allGather(send, recv, outer, inner, dtype, why),
                  why, error, size);
  };
  table.reduce_scatter = [](void *state, const void *send, void *recv,
                            size_t outer, size_t inner, int32_t dtype, void *,
                            char *error, size_t size) {
    std::string why;
    return report(
        self(state)->reduceScatter(send, recv, outer, inner, dtype, why), why,
        error, size);
  };
  table.all_to_all = [](void *state, const void *send, void *recv, size_t count,
                        int32_t dtype, void *, char *error, size_t size) {
    std::string why;
    return report(self(state)->allToAll(send, recv, count, dtype, why), why,
                  error, size);
  };
  table.send = [](void *state, const void *buf, size_t count, int32_t dtype,
                  int32_t peer, void *, char *error, size_t size) {
    std::string why;
    return report(self(state)->sendTo(buf, count, dtype, peer, why), why, error,
                  size);
  };
  table.recv = [](void *state, void *buf, size_t count, int32_t dtype,
                  int32_t peer, void *, char *error, size_t size) {
    std::string why;
    return report(self(state)->recvFrom(buf, count, dtype, peer, why), why,
                  error, size);
  };
  table.broadcast = [](void *state, void *buf, size_t count, int32_t dtype,
                       int32_t root, void *, char *error, size_t size) {
    std::string why;
    return report(self(state)->broadcast(buf, count, dtype, root, why), why,
                  error, size);
  };
}

MpiComm::~MpiComm() {
  if (!job->broken)
    MPI_Comm_free(&mpiComm);
}

bool MpiComm::splitAxis(int32_t axis, int32_t color, int32_t key, uint64_t maxBytes,
                        std::string &error) {
  if (axis < 0 || axis >= SLUICE_MESH_AXES) {
    error = "grid axis " + std::to_string(axis) + " out of range";
    return false;
  }
  MPI_Comm sub = MPI_COMM_NULL;
  int status = MPI_Comm_split(mpiComm, color, key, &sub);
  if (status == MPI_SUCCESS)
    status = MPI_Comm_set_errhandler(sub, MPI_ERRORS_RETURN);
  if (status != MPI_SUCCESS) {
    error = "MPI_Comm_split of a grid axis failed: " + mpiMessage(status);
    return false;
  }
  auto created = std::make_unique<MpiComm>(sub, timeout, job);
  if (!created->reserve(maxBytes, error))
    return false;
  axisComms[axis] = std::move(created);
  table.axes[axis] = axisComms[axis]->comm();
  return true;
}

const std::string &MpiComm::transport() const {
  static const std::string name = "mpi";
  return name;
}

bool MpiComm::reserve(uint64_t maxBytes, std::string &error) {
  // all_reduce's blocks round up: a little over maxBytes for many ranks.
  try {
    scratch.resize((size_t)maxBytes + 64 * (size_t)world);
  } catch (const std::bad_alloc &) {
    error = "cannot allocate " + std::to_string(maxBytes) +
            " bytes of collective scratch";
    return false;
  }
  return true;
}

unsigned char *MpiComm::scratchFor(size_t bytes) {
  if (scratch.size() < bytes)
    scratch.resize(bytes); // only if the manifest's bound was too small
  return scratch.data();
}

int MpiComm::collectiveTag() { return 1 + (int)(collectives++ % kTagSpan); }

int MpiComm::pointTag(std::vector<uint32_t> &counters, int32_t peer) {
  return kPointTagBase + (int)(counters[peer]++ % kTagSpan);
}

bool MpiComm::failed(const char *what, std::string &error) {
  job->broken = true;
  if (error.rfind(what, 0) != 0)
    error = std::string(what) + ": " + error;
  return false;
}

bool MpiComm::allReduce(const void *send, void *recv, size_t count,
                        int32_t dtype, std::string &error) {
  size_t es = dtypeBytes(dtype);
  if (!es)
    return failed("all_reduce",
                  error = "unknown element type " + std::to_string(dtype));
  if (world == 1 || count == 0) {
    if (send != recv && count)
      std::memmove(recv, send, count * es);
    return true;
  }
  auto *in = static_cast<const unsigned char *>(send);
  auto *out = static_cast<unsigned char *>(recv);
  size_t ownBegin = blockBegin(count, world, rank) * es;
  size_t ownCount = blockSize(count, world, rank);
  size_t slot = blockSize(count, world, world - 1) * es; // the largest block
  unsigned char *contributions = scratchFor(slot * world);

  // Phase 1: every rank's share of my block, into a slot per rank.
  Exchange reduce(mpiComm, collectiveTag(), timeout);
  for (int peer = 0; peer < world; ++peer) {
    if (peer == rank)
      continue;
    if (!reduce.recv(contributions + peer * slot, ownCount * es, peer, error) ||
        !reduce.send(in + blockBegin(count, world, peer) * es,
                     blockSize(count, world, peer) * es, peer, error))
      return failed("all_reduce", error);
  }
  if (!reduce.wait("all_reduce", error))
    return failed("all_reduce", error);
  std::vector<const void *> sources(world);
  for (int peer = 0; peer < world; ++peer)
    sources[peer] = peer == rank ? in + ownBegin : contributions + peer * slot;
  sumInto(out + ownBegin, sources.data(), world, ownCount, dtype);

  // Phase 2: every rank's sum, into place.
  Exchange gather(mpiComm, collectiveTag(), timeout);
  for (int peer = 0; peer < world; ++peer) {
    if (peer == rank)
      continue;
    if (!gather.recv(out + blockBegin(count, world, peer) * es,
                     blockSize(count, world, peer) * es, peer, error) ||
        !gather.send(out + ownBegin, ownCount * es, peer, error))
      return failed("all_reduce", error);
  }
  return gather.wait("all_reduce", error) || failed("all_reduce", error);
}

bool MpiComm::allGather(const void *send, void *recv, size_t outer,
                        size_t inner, int32_t dtype, std::string &error) {
  size_t es = dtypeBytes(dtype);
  if (!es)
    return failed("all_gather",
                  error = "unknown element type " + std::to_string(dtype));
  auto *in = static_cast<const unsigned char *>(send);
  auto *out = static_cast<unsigned char *>(recv);
  size_t row = inner * es, stride = (size_t)world * row;
  // Rank r's [outer, inner] lands at recv[o][r][:].
  Exchange exchange(mpiComm, collectiveTag(), timeout);
  for (int peer = 0; peer < world; ++peer) {
    if (peer == rank)
      continue;
    if (!exchange.recvStrided(out + peer * row, row, outer, stride, peer,
                              error) ||
        !exchange.send(in, outer * row, peer, error))
      return failed("all_gather", error);
  }
  for (size_t o = 0; o < outer; ++o)
    std::memcpy(out + o * stride + rank * row, in + o * row, row);
  return exchange.wait("all_gather", error) || failed("all_gather", error);
}

bool MpiComm::reduceScatter(const void *send, void *recv, size_t outer,
                            size_t inner, int32_t dtype, std::string &error) {
  size_t es = dtypeBytes(dtype);
  if (!es)
    return failed("reduce_scatter",
                  error = "unknown element type " + std::to_string(dtype));
  auto *in = static_cast<const unsigned char *>(send);
  auto *out = static_cast<unsigned char *>(recv);
  size_t row = inner * es, stride = (size_t)world * row, block = outer * row;
  unsigned char *contributions = scratchFor(block * world);
  // send[o][p][:] for every o goes to rank p; rank q's share of mine comes
  // back contiguous.
  Exchange exchange(mpiComm, collectiveTag(), timeout);
  for (int peer = 0; peer < world; ++peer) {
    if (peer == rank)
      continue;
    if (!exchange.recv(contributions + peer * block, block, peer, error) ||
        !exchange.sendStrided(in + peer * row, row, outer, stride, peer, error))
      return failed("reduce_scatter", error);
  }
  if (!exchange.wait("reduce_scatter", error))
    return failed("reduce_scatter", error);
  std::vector<const void *> sources(world);
  for (size_t o = 0; o < outer; ++o) {
    for (int peer = 0; peer < world; ++peer)
      sources[peer] = peer == rank ? in + o * stride + rank * row
                                   : contributions + peer * block + o * row;
    sumInto(out + o * row, sources.data(), world, inner, dtype);
  }
  return true;
}

bool MpiComm::allToAll(const void *send, void *recv, size_t count,
                       int32_t dtype, std::string &error) {
  size_t es = dtypeBytes(dtype);
  if (!es)
    return failed("all_to_all",
                  error = "unknown element type " + std::to_string(dtype));
  auto *in = static_cast<const unsigned char *>(send);
  auto *out = static_cast<unsigned char *>(recv);
  size_t block = count * es;
  Exchange exchange(mpiComm, collectiveTag(), timeout);
  for (int peer = 0; peer < world; ++peer) {
    if (peer == rank)
      continue;
    if (!exchange.recv(out + peer * block, block, peer, error) ||
        !exchange.send(in + peer * block, block, peer, error))
      return failed("all_to_all", error);
  }
  if (block)
    std::memcpy(out + rank * block, in + rank * block, block);
  return exchange.wait("all_to_all", error) || failed("all_to_all", error);
}

bool MpiComm::sendTo(const void *buf, size_t count, int32_t dtype, int32_t peer,
                     std::string &error) {
  size_t es = dtypeBytes(dtype);
  if (!es || peer < 0 || peer >= world || peer == rank)
    return failed("send",
                  error = !es ? "unknown element type " + std::to_string(dtype)
                              : "no peer rank " + std::to_string(peer) +
                                    " for rank " + std::to_string(rank));
  Exchange exchange(mpiComm, pointTag(sent, peer), timeout);
  return (exchange.send(buf, count * es, peer, error) &&
          exchange.wait("send", error)) ||
         failed("send", error);
}

bool MpiComm::recvFrom(void *buf, size_t count, int32_t dtype, int32_t peer,
                       std::string &error) {
  size_t es = dtypeBytes(dtype);
  if (!es || peer < 0 || peer >= world || peer == rank)
    return failed("recv",
                  error = !es ? "unknown element type " + std::to_string(dtype)
                              : "no peer rank " + std::to_string(peer) +
                                    " for rank " + std::to_string(rank));
  Exchange exchange(mpiComm, pointTag(received, peer), timeout);
  return (exchange.recv(buf, count * es, peer, error) &&
          exchange.wait("recv", error)) ||
         failed("recv", error);
}

bool MpiComm::broadcast(void *buf, size_t count, int32_t dtype, int32_t root,
                        std::string &error) {
  size_t es = dtypeBytes(dtype);
  if (!es || root < 0 || root >= world)
    return failed("broadcast",
                  error = !es ? "unknown element type " + std::to_string(dtype)
                              : "no root rank " + std::to_string(root));
  Exchange exchange(mpiComm, collectiveTag(), timeout);
  if (rank == root) {
    for (int peer = 0; peer < world; ++peer)
      if (peer != rank && !exchange.send(buf, count * es, peer, error))
        return failed("broadcast", error);
  } else if (!exchange.recv(buf, count * es, root, error)) {
    return failed("broadcast", error);
  }
  return exchange.wait("broadcast", error) || failed("broadcast", error);
}

//===----------------------------------------------------------------------===//
// MpiGroup
//===----------------------------------------------------------------------===//

std::unique_ptr<MpiGroup> MpiGroup::create(const MPI_Comm *base,
                                           std::string &error) {
  std::unique_ptr<MpiGroup> group(new MpiGroup());
  if (!readTimeout(group->timeout, error))
    return nullptr;
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (finalized) {
    error = "MPI was finalized already; a multi-rank job needs it running";
    return nullptr;
  }
  if (!initialized) {
    // MULTIPLE: a cuda rank's host-staged collectives run on a CUDA callback
    // thread while the thread that started the run waits on the stream.
    int provided = 0;
    int status =
        MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
    if (status != MPI_SUCCESS) {
      error = "MPI_Init_thread failed: " + mpiMessage(status);
      return nullptr;
    }
    group->ownsMpi = true;
  }
  int level = MPI_THREAD_SINGLE;
  MPI_Query_thread(&level);
  group->multiple = level == MPI_THREAD_MULTIPLE;
  // A communicator of our own: nothing the program sends can match ours,
  // and errors come back as codes instead of aborting the job.
  int status = MPI_Comm_dup(base ? *base : MPI_COMM_WORLD, &group->comm);
  if (status == MPI_SUCCESS)
    status = MPI_Comm_set_errhandler(group->comm, MPI_ERRORS_RETURN);
  int rank = 0, world = 1;
  if (status == MPI_SUCCESS)
    status = MPI_Comm_rank(group->comm, &rank);
  if (status == MPI_SUCCESS)
    status = MPI_Comm_size(group->comm, &world);
  // The ranks that share this host: a cuda rank's GPU is its local rank.
  MPI_Comm local = MPI_COMM_NULL;
  if (status == MPI_SUCCESS)
    status = MPI_Comm_split_type(group->comm, MPI_COMM_TYPE_SHARED, rank,
                                 MPI_INFO_NULL, &local);
  int localRank = 0, localSize = 1;
  if (status == MPI_SUCCESS)
    status = MPI_Comm_rank(local, &localRank);
  if (status == MPI_SUCCESS)
    status = MPI_Comm_size(local, &localSize);
  if (local != MPI_COMM_NULL)
    MPI_Comm_free(&local);
  if (status != MPI_SUCCESS) {
    error = "cannot set up the job's communicator: " + mpiMessage(status);
    return nullptr;
  }
  group->rank_ = rank;
  group->world_ = world;
  group->localRank_ = localRank;
  group->localSize_ = localSize;
  return group;
}

MpiGroup::~MpiGroup() {
  // After a failure, ranks are missing: MPI_Comm_free and MPI_Finalize
  // would wait for them. The process exits without, and the launcher ends
  // the job.
  if (job->broken)
    return;
  if (comm != MPI_COMM_NULL)
    MPI_Comm_free(&comm);
  if (ownsMpi && shutDown)
    MPI_Finalize();
}

bool MpiGroup::broadcast(void *data, size_t bytes, int32_t root,
                         std::string &error) {
  if (job->broken) {
    error = "broadcast: the job's communicator failed earlier";
    return false;
  }
  if (root < 0 || root >= world_) {
    error = "broadcast: no root rank " + std::to_string(root);
    return false;
  }
  Exchange exchange(comm, nextTag(), timeout);
  bool ok = true;
  if (rank_ == root) {
    for (int peer = 0; ok && peer < world_; ++peer)
      if (peer != rank_)
        ok = exchange.send(data, bytes, peer, error);
  } else {
    ok = exchange.recv(data, bytes, root, error);
  }
  if (ok && exchange.wait("broadcast", error))
    return true;
  job->broken = true;
  return false;
}

bool MpiGroup::allGather(const void *data, size_t bytes, void *out,
                         std::string &error) {
  if (job->broken) {
    error = "all_gather: the job's communicator failed earlier";
    return false;
  }
  auto *gathered = static_cast<unsigned char *>(out);
  Exchange exchange(comm, nextTag(), timeout);
  bool ok = true;
  for (int peer = 0; ok && peer < world_; ++peer)
    if (peer != rank_)
      ok = exchange.recv(gathered + peer * bytes, bytes, peer, error) &&
           exchange.send(data, bytes, peer, error);
  if (bytes)
    std::memmove(gathered + rank_ * bytes, data, bytes);
  if (ok && exchange.wait("all_gather", error))
    return true;
  job->broken = true;
  return false;
}

bool MpiGroup::createHostComm(uint64_t maxBytes, std::unique_ptr<RankComm> &out,
                              std::string &error) {
  // Meet first, with the deadline: MPI_Comm_dup waits for every rank and
  // has none, so a rank that never creates its context would hang it.
  std::vector<unsigned char> arrived(world_);
  unsigned char here = 1;
  if (!allGather(&here, 1, arrived.data(), error)) {
    error = "creating a context's communicator: " + error;
    return false;
  }
  MPI_Comm dup = MPI_COMM_NULL;
  int status = MPI_Comm_dup(comm, &dup);
  if (status == MPI_SUCCESS)
    status = MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
  if (status != MPI_SUCCESS) {
    error = "MPI_Comm_dup failed: " + mpiMessage(status);
    return false;
  }
  auto created = std::make_unique<MpiComm>(dup, timeout, job);
  if (!created->reserve(maxBytes, error))
    return false;
  out = std::move(created);
  return true;
}

bool MpiGroup::shutdown(std::string &error) {
  if (job->broken) {
    error = "the job's communicator failed earlier";
    return false;
  }
  std::vector<unsigned char> arrived(world_);
  unsigned char here = 1;
  if (!allGather(&here, 1, arrived.data(), error)) {
    error = "shutting down: " + error;
    return false;
  }
  shutDown = true;
  return true;
}

} // namespace sluice::runtime::comm

using sluice::runtime::ProcessGroup;

/// libsluice_comm.so's one export (runtime/core/Comm.h).
extern "C" __attribute__((visibility("default"))) int32_t
sluice_comm_create_group(int32_t interface, const void *mpiComm,
                         ProcessGroup **out, std::string *error) {
  if (interface != sluice::runtime::kCommInterface) {
    *error = "libsluice_comm.so has interface " +
             std::to_string(sluice::runtime::kCommInterface) +
             ", the runtime " + std::to_string(interface) +
             " (install the libraries of one build)";
    return 1;
  }
  try {
    auto group = sluice::runtime::comm::MpiGroup::create(
        static_cast<const MPI_Comm *>(mpiComm), *error);
    if (!group)
      return 1;
    *out = group.release();
    return 0;
  } catch (const std::bad_alloc &) {
    *error = "out of memory";
    return 1;
  }
}
