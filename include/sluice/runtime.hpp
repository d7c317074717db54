//===- sluice/runtime.hpp - C++ wrapper of the runtime C API ----*- C++ -*-===//
//
// Header-only RAII over include/sluice/runtime.h. Errors come back as a bool
// plus a message (no exceptions), so the wrapper works in code built with
// -fno-exceptions too. The C API's thread-safety rules hold unchanged: share
// a Model freely, give each thread its own Context. A multi-rank bundle's
// rank runs through Communicator, Model::loadRank and Context::createRank
// (the call sequence is in runtime.h).
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_RUNTIME_HPP
#define SLUICE_RUNTIME_HPP

#include "sluice/runtime.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace sluice::rt {

/// One graph input or output as the manifest declares it.
struct TensorInfo {
  std::string name;
  std::string dtype; ///< NumPy's name: "float32", "int64", "bool" ...
  std::vector<int64_t> shape;
  size_t bytes = 0;
};

/// One generated kernel or library call.
struct KernelInfo {
  std::string name, kind, op, node;
};

/// One mixture-of-experts op (sluice_model_moe).
struct MoeInfo {
  std::string node, gating;
  int64_t experts = 0, topK = 1, expertsPerRank = 0;
};

namespace detail {
inline bool check(SluiceStatus status, std::string *error) {
  if (status == SLUICE_OK)
    return true;
  if (error)
    *error = sluice_last_error();
  return false;
}
inline TensorInfo toInfo(const SluiceTensorInfo &info) {
  return {info.name, info.dtype,
          std::vector<int64_t>(info.dims, info.dims + info.rank), info.bytes};
}
} // namespace detail

/// A loaded bundle; movable, not copyable.
class Model {
public:
  Model() = default;
  ~Model() { sluice_model_free(model); }
  Model(Model &&other) noexcept : model(other.model) { other.model = nullptr; }
  Model &operator=(Model &&other) noexcept {
    std::swap(model, other.model);
    return *this;
  }
  Model(const Model &) = delete;
  Model &operator=(const Model &) = delete;

  /// Loads the bundle in `dir` (replacing any loaded one); false with
  /// `error` set on failure.
  bool load(const std::string &dir, std::string *error = nullptr) {
    SluiceModel *loaded = nullptr;
    if (!detail::check(sluice_model_load(dir.c_str(), &loaded), error))
      return false;
    sluice_model_free(model);
    model = loaded;
    return true;
  }

  /// Loads rank `rank` of the bundle in `dir` (maps only its weights).
  bool loadRank(const std::string &dir, int32_t rank,
                std::string *error = nullptr) {
    SluiceModel *loaded = nullptr;
    if (!detail::check(sluice_model_load_rank(dir.c_str(), rank, &loaded),
                       error))
      return false;
    sluice_model_free(model);
    model = loaded;
    return true;
  }

  bool loaded() const { return model != nullptr; }
  /// Ranks the bundle runs as (1: a single-rank bundle).
  int32_t worldSize() const {
    int32_t n = 1;
    sluice_model_world_size(model, &n);
    return n;
  }
  /// The rank it was loaded as.
  int32_t rank() const {
    int32_t r = 0;
    sluice_model_rank(model, &r);
    return r;
  }
  const SluiceModel *get() const { return model; }

  size_t numInputs() const {
    size_t n = 0;
    sluice_model_num_inputs(model, &n);
    return n;
  }
  size_t numOutputs() const {
    size_t n = 0;
    sluice_model_num_outputs(model, &n);
    return n;
  }
  TensorInfo input(size_t index) const {
    SluiceTensorInfo info = {};
    if (sluice_model_input(model, index, &info) != SLUICE_OK)
      return {};
    return detail::toInfo(info);
  }
  TensorInfo output(size_t index) const {
    SluiceTensorInfo info = {};
    if (sluice_model_output(model, index, &info) != SLUICE_OK)
      return {};
    return detail::toInfo(info);
  }
  /// Shape variants (sluice-compile --shapes): 1 for a bundle without.
  size_t numVariants() const {
    size_t n = 1;
    sluice_model_num_variants(model, &n);
    return n;
  }
  /// Input / output `index` of shape variant `variant`.
  TensorInfo variantInput(size_t variant, size_t index) const {
    SluiceTensorInfo info = {};
    if (sluice_model_variant_input(model, variant, index, &info) != SLUICE_OK)
      return {};
    return detail::toInfo(info);
  }
  TensorInfo variantOutput(size_t variant, size_t index) const {
    SluiceTensorInfo info = {};
    if (sluice_model_variant_output(model, variant, index, &info) != SLUICE_OK)
      return {};
    return detail::toInfo(info);
  }
  std::string target() const { return query(sluice_model_target); }
  std::string version() const { return query(sluice_model_version); }
  std::string name() const { return query(sluice_model_name); }
  size_t arenaBytes() const {
    size_t n = 0;
    sluice_model_arena_bytes(model, &n);
    return n;
  }
  size_t weightsBytes() const {
    size_t n = 0;
    sluice_model_weights_bytes(model, &n);
    return n;
  }
  std::vector<KernelInfo> kernels() const {
    size_t n = 0;
    sluice_model_num_kernels(model, &n);
    std::vector<KernelInfo> result;
    for (size_t i = 0; i < n; ++i) {
      SluiceKernelInfo info = {};
      if (sluice_model_kernel(model, i, &info) == SLUICE_OK)
        result.push_back({info.name, info.kind, info.op, info.node});
    }
    return result;
  }
  /// The moe ops, in the order of their expert-load counters.
  std::vector<MoeInfo> moe() const {
    size_t n = 0;
    sluice_model_num_moe(model, &n);
    std::vector<MoeInfo> result;
    for (size_t i = 0; i < n; ++i) {
      SluiceMoeInfo info = {};
      if (sluice_model_moe(model, i, &info) == SLUICE_OK)
        result.push_back({info.node, info.gating, info.experts, info.top_k, info.experts_per_rank});
    }
    return result;
  }

private:
  std::string query(SluiceStatus (*get)(const SluiceModel *,
                                        const char **)) const {
    const char *text = nullptr;
    return get(model, &text) == SLUICE_OK && text ? text : "";
  }

  SluiceModel *model = nullptr;
};

/// This process's place in a multi-rank job; contexts made with it must be
/// freed before it.
class Communicator {
public:
  Communicator() = default;
  ~Communicator() { sluice_comm_free(comm); }
  Communicator(Communicator &&other) noexcept : comm(other.comm) {
    other.comm = nullptr;
  }
  Communicator &operator=(Communicator &&other) noexcept {
    std::swap(comm, other.comm);
    return *this;
  }
  Communicator(const Communicator &) = delete;
  Communicator &operator=(const Communicator &) = delete;

  /// Joins the job (MPI initialized unless it is); `mpiComm` points to the
  /// program's MPI_Comm, null for MPI_COMM_WORLD.
  bool init(std::string *error = nullptr, const void *mpiComm = nullptr) {
    SluiceCommunicator *created = nullptr;
    if (!detail::check(sluice_comm_init(mpiComm, &created), error))
      return false;
    sluice_comm_free(comm);
    comm = created;
    return true;
  }
  /// Leaves the job (MPI finalized if init started it); false when a rank
  /// did not arrive or one failed earlier: then exit the process.
  bool free(std::string *error = nullptr) {
    SluiceCommunicator *leaving = comm;
    comm = nullptr;
    return detail::check(sluice_comm_free(leaving), error);
  }
  SluiceCommunicator *get() const { return comm; }
  int32_t rank() const {
    int32_t r = 0, w = 1;
    sluice_comm_rank(comm, &r, &w);
    return r;
  }
  int32_t worldSize() const {
    int32_t r = 0, w = 1;
    sluice_comm_rank(comm, &r, &w);
    return w;
  }
  int32_t localRank() const {
    int32_t r = 0, n = 1;
    sluice_comm_local_rank(comm, &r, &n);
    return r;
  }
  int32_t localSize() const {
    int32_t r = 0, n = 1;
    sluice_comm_local_rank(comm, &r, &n);
    return n;
  }
  /// `bytes` at `data` from rank `root` to every rank.
  bool broadcast(void *data, size_t bytes, int32_t root,
                 std::string *error = nullptr) {
    return detail::check(sluice_comm_broadcast(comm, data, bytes, root),
                         error);
  }
  /// Whether every rank is `ok`; `firstFailed` gets the lowest rank that is
  /// not (-1 if all are). False (with `error`) if a rank did not answer.
  bool agree(bool ok, bool &allOk, int32_t *firstFailed = nullptr,
             std::string *error = nullptr) {
    int32_t failed = 0, first = -1;
    if (!detail::check(sluice_comm_agree(comm, ok ? 1 : 0, &failed, &first),
                       error))
      return false;
    allOk = failed == 0;
    if (firstFailed)
      *firstFailed = first;
    return true;
  }

private:
  SluiceCommunicator *comm = nullptr;
};

/// Where a launcher put this process (runtime.h, sluice_launch_info).
inline SluiceLaunchInfo launchInfo() {
  SluiceLaunchInfo info = {};
  sluice_launch_info(&info);
  return info;
}

/// One thread's run state for a Model. It keeps the model's bundle loaded:
/// the Model may be destroyed first.
class Context {
public:
  Context() = default;
  ~Context() { sluice_context_free(context); }
  Context(Context &&other) noexcept : context(other.context) {
    other.context = nullptr;
  }
  Context &operator=(Context &&other) noexcept {
    std::swap(context, other.context);
    return *this;
  }
  Context(const Context &) = delete;
  Context &operator=(const Context &) = delete;

  /// Creates the context (arena and outputs) for `model`; cuda bundles on
  /// GPU `device` (-1: SLUICE_DEVICE, else 0).
  bool create(const Model &model, std::string *error = nullptr,
              int32_t device = -1) {
    SluiceContext *created = nullptr;
    if (!detail::check(
            sluice_context_create_on_device(model.get(), device, &created),
            error))
      return false;
    sluice_context_free(context);
    context = created;
    return true;
  }

  /// Creates the context of a multi-rank bundle's rank (collective); cuda
  /// bundles on GPU `device`, -1 for the rank's local rank.
  bool createRank(const Model &model, Communicator &comm,
                  std::string *error = nullptr, int32_t device = -1) {
    SluiceContext *created = nullptr;
    if (!detail::check(sluice_context_create_rank(model.get(), comm.get(),
                                                  device, &created),
                       error))
      return false;
    sluice_context_free(context);
    context = created;
    return true;
  }
  /// "mpi", "nccl" ... for a multi-rank context; "" otherwise.
  std::string commTransport() const {
    const char *name = nullptr;
    return sluice_context_comm_transport(context, &name) == SLUICE_OK && name
               ? name
               : "";
  }

  /// Copies input `index`; `bytes` must match the manifest.
  bool setInput(size_t index, const void *data, size_t bytes,
                std::string *error = nullptr) {
    return detail::check(sluice_context_set_input(context, index, data, bytes),
                         error);
  }
  /// Binds input `index` without copying; `data` must outlive its use.
  bool bindInput(size_t index, const void *data, size_t bytes,
                 std::string *error = nullptr) {
    return detail::check(sluice_context_bind_input(context, index, data, bytes),
                         error);
  }
  /// cuda: binds input `index` to device memory of the context's GPU (each
  /// run copies it on the device, no host copy); `data` must outlive its use.
  bool bindDeviceInput(size_t index, const void *data, size_t bytes,
                       std::string *error = nullptr) {
    return detail::check(sluice_context_bind_device_input(context, index, data, bytes), error);
  }
  /// Declares input `index`'s shape: a bundle of shape variants runs the
  /// variant whose input shapes equal the declared ones.
  bool setInputShape(size_t index, const std::vector<int64_t> &dims,
                     std::string *error = nullptr) {
    return detail::check(sluice_context_set_input_shape(context, index, dims.data(),
                                                        (int32_t)dims.size()),
                         error);
  }
  /// The shape variant the last run used (0 without variants).
  size_t variant() const {
    size_t v = 0;
    sluice_context_variant(context, &v);
    return v;
  }
  bool setNumThreads(int32_t threads, std::string *error = nullptr) {
    return detail::check(sluice_context_set_num_threads(context, threads),
                         error);
  }
  /// The thread count the next run uses (0 without a context).
  int32_t numThreads() const {
    int32_t threads = 0;
    return sluice_context_num_threads(context, &threads) == SLUICE_OK ? threads : 0;
  }
  void enableTrace(bool on) { sluice_context_enable_trace(context, on); }
  /// cuda: capture runs into a CUDA graph (on by default).
  void enableCudaGraph(bool on) {
    sluice_context_enable_cuda_graph(context, on);
  }
  /// Whether the last run replayed a CUDA graph; if not, why in `reason`.
  bool replayedCudaGraph(std::string *reason = nullptr) const {
    int replayed = 0;
    const char *why = "";
    if (sluice_context_cuda_graph(context, &replayed, &why) != SLUICE_OK)
      return false;
    if (reason)
      *reason = why;
    return replayed != 0;
  }
  /// "cpu", or the GPU ("NVIDIA H100 80GB HBM3 (sm_90, device 0)").
  std::string device() const {
    const char *name = nullptr;
    return sluice_context_device(context, &name) == SLUICE_OK && name ? name
                                                                        : "";
  }

  bool run(std::string *error = nullptr) {
    return detail::check(sluice_context_run(context), error);
  }

  /// Output `index` of the last run (null, 0 for a bad index).
  const void *output(size_t index, size_t *bytes = nullptr) const {
    const void *data = nullptr;
    size_t n = 0;
    if (sluice_context_output(context, index, &data, &n) != SLUICE_OK)
      data = nullptr;
    if (bytes)
      *bytes = n;
    return data;
  }
  /// Dims of output `index` as the last run shaped them.
  std::vector<int64_t> outputDims(size_t index) const {
    const int64_t *dims = nullptr;
    int32_t rank = 0;
    if (sluice_context_output_dims(context, index, &dims, &rank) != SLUICE_OK)
      return {};
    return std::vector<int64_t>(dims, dims + rank);
  }
  /// The last run's duration in microseconds.
  double runMicroseconds() const {
    double us = 0;
    sluice_context_run_time(context, &us);
    return us;
  }
  /// cuda: the last run's host-to-device, compute and device-to-host
  /// milliseconds (CUDA events); false on cpu and before a run.
  bool runSplit(double &hostToDeviceMs, double &computeMs,
                double &deviceToHostMs) const {
    int available = 0;
    return sluice_context_run_split(context, &hostToDeviceMs, &computeMs,
                                    &deviceToHostMs,
                                    &available) == SLUICE_OK &&
           available;
  }
  /// The last traced run's kernel and library calls.
  std::vector<SluiceTraceEvent> trace() const {
    const SluiceTraceEvent *events = nullptr;
    size_t n = 0;
    if (sluice_context_trace(context, &events, &n) != SLUICE_OK || !events)
      return {};
    return std::vector<SluiceTraceEvent>(events, events + n);
  }
  /// Tokens moe op `index` (of `experts`) routed to each expert since the
  /// context was created or reset; empty on error.
  std::vector<int64_t> expertLoad(size_t index, int64_t experts,
                                  std::string *error = nullptr) const {
    std::vector<int64_t> counts(experts > 0 ? size_t(experts) : 0);
    if (!detail::check(sluice_context_expert_load(context, index, counts.data(), counts.size()),
                       error))
      return {};
    return counts;
  }
  bool resetExpertLoad(std::string *error = nullptr) {
    return detail::check(sluice_context_reset_expert_load(context), error);
  }

private:
  SluiceContext *context = nullptr;
};

} // namespace sluice::rt

#endif // SLUICE_RUNTIME_HPP
