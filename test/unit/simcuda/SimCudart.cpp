//===- SimCudart.cpp - a simulated CUDA runtime for GPU-less runtime tests -===//
//
// Stands in for libcudart.so.13 (same soname and symbol version; preloaded
// with LD_PRELOAD) so that the runtime's cuda context runs on machines
// without a GPU: "device" memory is host memory, a stream runs each
// operation as it is enqueued, a capture records the operations and a graph
// replays them, events take the time they run at. It implements what
// libsluice_runtime_cuda.so and SimCudaModel.cpp call, with the rules that
// matter to them: synchronizing or allocating calls during a
// cudaStreamCaptureModeThreadLocal capture on the same thread fail and
// invalidate it, and cudaGetLastError clears the last error.
//
// What it tests is the runtime's side (staging, the order of copies, graph
// capture and replay, the fallback, trace resolution, errors), not CUDA;
// with MPI ranks sharing its one device, the multi-rank cuda context and
// the host-staged transport of libsluice_comm_cuda.so (test/runtime).
//
//===----------------------------------------------------------------------===//

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>
#include <vector>

namespace {

struct Op {
  enum Kind { Copy, Host, Record } kind;
  void *dst = nullptr;
  const void *src = nullptr;
  size_t bytes = 0;
  cudaHostFn_t fn = nullptr;
  void *data = nullptr;
  cudaEvent_t event = nullptr;
};

struct SimStream {
  bool capturing = false;
  bool invalidated = false;
  std::vector<Op> ops;
};

struct SimGraph {
  std::vector<Op> ops;
};

struct SimEvent {
  bool recorded = false;
  std::chrono::steady_clock::time_point at;
};

enum class Memory { Device, Host };
struct Block {
  size_t bytes;
  Memory kind;
  int device; ///< current when it was allocated
};
/// The current device, per thread as in CUDA (the runtime must give the
/// caller's back: CudaRuntimeTest checks it).
thread_local int currentDevice = 0;
std::mutex mutex;
std::map<const char *, Block> blocks; ///< by start address
thread_local cudaError_t lastError = cudaSuccess;
thread_local SimStream *capturingHere = nullptr;

cudaError_t fail(cudaError_t error) {
  lastError = error;
  return error;
}

/// A call that may not run during a thread-local capture on this thread.
bool refusedInCapture() {
  if (!capturingHere)
    return false;
  capturingHere->invalidated = true;
  lastError = cudaErrorStreamCaptureUnsupported;
  return true;
}

void execute(const Op &op) {
  switch (op.kind) {
  case Op::Copy:
    std::memcpy(op.dst, op.src, op.bytes);
    break;
  case Op::Host:
    op.fn(op.data);
    break;
  case Op::Record: {
    auto *event = reinterpret_cast<SimEvent *>(op.event);
    event->recorded = true;
    event->at = std::chrono::steady_clock::now();
    break;
  }
  }
}

cudaError_t enqueue(cudaStream_t stream, const Op &op) {
  auto *s = reinterpret_cast<SimStream *>(stream);
  if (s && s->capturing)
    s->ops.push_back(op);
  else
    execute(op);
  return cudaSuccess;
}

cudaError_t allocate(void **p, size_t bytes, Memory kind) {
  if (refusedInCapture())
    return cudaErrorStreamCaptureUnsupported;
  *p = std::calloc(1, bytes ? bytes : 1);
  if (!*p)
    return fail(cudaErrorMemoryAllocation);
  std::lock_guard<std::mutex> lock(mutex);
  blocks[static_cast<const char *>(*p)] = {bytes, kind, currentDevice};
  return cudaSuccess;
}

cudaError_t release(void *p) {
  if (!p)
    return cudaSuccess;
  std::lock_guard<std::mutex> lock(mutex);
  blocks.erase(static_cast<const char *>(p));
  std::free(p);
  return cudaSuccess;
}

} // namespace

extern "C" {

const char *cudaGetErrorString(cudaError_t error) {
  switch (error) {
  case cudaSuccess:
    return "no error";
  case cudaErrorStreamCaptureUnsupported:
    return "operation not permitted when stream is capturing";
  case cudaErrorStreamCaptureInvalidated:
    return "operation failed due to a previous error during capture";
  case cudaErrorNoDevice:
    return "no CUDA-capable device is detected";
  default:
    return "simulated CUDA error";
  }
}

const char *cudaGetErrorName(cudaError_t error) {
  switch (error) {
  case cudaSuccess:
    return "cudaSuccess";
  case cudaErrorStreamCaptureUnsupported:
    return "cudaErrorStreamCaptureUnsupported";
  case cudaErrorStreamCaptureInvalidated:
    return "cudaErrorStreamCaptureInvalidated";
  case cudaErrorNoDevice:
    return "cudaErrorNoDevice";
  default:
    return "cudaErrorSimulated";
  }
}

cudaError_t cudaGetLastError(void) {
  cudaError_t error = lastError;
  lastError = cudaSuccess;
  return error;
}

/// SIM_CUDA_DEVICES (default 1) devices of capability SIM_CUDA_SM (default
/// 90: sm_90).
cudaError_t cudaGetDeviceCount(int *count) {
  const char *env = std::getenv("SIM_CUDA_DEVICES");
  *count = env ? std::atoi(env) : 1;
  return *count ? cudaSuccess : fail(cudaErrorNoDevice);
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp *properties, int device) {
  std::memset(properties, 0, sizeof *properties);
  std::snprintf(properties->name, sizeof properties->name,
                "Simulated GPU %d", device);
  const char *env = std::getenv("SIM_CUDA_SM");
  int sm = env ? std::atoi(env) : 90;
  properties->major = sm / 10;
  properties->minor = sm % 10;
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || device < 0 || device >= count)
    return fail(cudaErrorInvalidDevice);
  currentDevice = device;
  return cudaSuccess;
}

cudaError_t cudaGetDevice(int *device) {
  *device = currentDevice;
  return cudaSuccess;
}

cudaError_t cudaMalloc(void **p, size_t bytes) {
  return allocate(p, bytes, Memory::Device);
}

cudaError_t cudaHostAlloc(void **p, size_t bytes, unsigned int) {
  return allocate(p, bytes, Memory::Host);
}

cudaError_t cudaFree(void *p) { return release(p); }
cudaError_t cudaFreeHost(void *p) { return release(p); }

cudaError_t cudaMemset(void *p, int value, size_t bytes) {
  if (refusedInCapture())
    return cudaErrorStreamCaptureUnsupported;
  std::memset(p, value, bytes);
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes,
                       enum cudaMemcpyKind) {
  if (refusedInCapture())
    return cudaErrorStreamCaptureUnsupported;
  std::memcpy(dst, src, bytes);
  return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes,
                            enum cudaMemcpyKind, cudaStream_t stream) {
  Op op{Op::Copy};
  op.dst = dst;
  op.src = src;
  op.bytes = bytes;
  return enqueue(stream, op);
}

cudaError_t cudaMemsetAsync(void *p, int value, size_t bytes, cudaStream_t) {
  std::memset(p, value, bytes);
  return cudaSuccess;
}

cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn,
                               void *data) {
  Op op{Op::Host};
  op.fn = fn;
  op.data = data;
  return enqueue(stream, op);
}

cudaError_t cudaPointerGetAttributes(cudaPointerAttributes *attributes,
                                     const void *p) {
  std::memset(attributes, 0, sizeof *attributes);
  std::lock_guard<std::mutex> lock(mutex);
  // The block holding p, if any: the last one starting at or before it.
  const char *at = static_cast<const char *>(p);
  auto it = blocks.upper_bound(at);
  bool inside = it != blocks.begin() &&
                at < std::prev(it)->first + std::prev(it)->second.bytes;
  attributes->type = !inside ? cudaMemoryTypeUnregistered
                     : std::prev(it)->second.kind == Memory::Device
                         ? cudaMemoryTypeDevice
                         : cudaMemoryTypeHost;
  if (inside)
    attributes->device = std::prev(it)->second.device;
  return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned int) {
  *stream = reinterpret_cast<cudaStream_t>(new SimStream());
  return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  delete reinterpret_cast<SimStream *>(stream);
  return cudaSuccess;
}

/// Every operation ran as it was enqueued.
cudaError_t cudaStreamQuery(cudaStream_t) { return cudaSuccess; }

cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src,
                              size_t spitch, size_t width, size_t height,
                              enum cudaMemcpyKind, cudaStream_t stream) {
  for (size_t row = 0; row < height; ++row) {
    Op op{Op::Copy};
    op.dst = static_cast<char *>(dst) + row * dpitch;
    op.src = static_cast<const char *>(src) + row * spitch;
    op.bytes = width;
    enqueue(stream, op);
  }
  return cudaSuccess;
}

/// Device N sits on bus N + 1 of this host: ranks on one device share it.
cudaError_t cudaDeviceGetPCIBusId(char *id, int length, int device) {
  std::snprintf(id, (size_t)length, "0000:%02x:00.0", device + 1);
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t) {
  if (refusedInCapture())
    return cudaErrorStreamCaptureUnsupported;
  return cudaSuccess;
}

cudaError_t cudaStreamBeginCapture(cudaStream_t stream,
                                   enum cudaStreamCaptureMode) {
  auto *s = reinterpret_cast<SimStream *>(stream);
  if (!s || s->capturing)
    return fail(cudaErrorIllegalState);
  s->capturing = true;
  s->invalidated = false;
  s->ops.clear();
  capturingHere = s;
  return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *graph) {
  auto *s = reinterpret_cast<SimStream *>(stream);
  *graph = nullptr;
  if (!s || !s->capturing)
    return fail(cudaErrorIllegalState);
  s->capturing = false;
  capturingHere = nullptr;
  if (s->invalidated)
    return fail(cudaErrorStreamCaptureInvalidated);
  *graph = reinterpret_cast<cudaGraph_t>(new SimGraph{s->ops});
  return cudaSuccess;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t stream,
                                  enum cudaStreamCaptureStatus *status) {
  auto *s = reinterpret_cast<SimStream *>(stream);
  *status = s && s->capturing
                ? (s->invalidated ? cudaStreamCaptureStatusInvalidated
                                  : cudaStreamCaptureStatusActive)
                : cudaStreamCaptureStatusNone;
  return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t graph,
                                 unsigned long long) {
  *exec = reinterpret_cast<cudaGraphExec_t>(
      new SimGraph(*reinterpret_cast<SimGraph *>(graph)));
  return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
  for (const Op &op : reinterpret_cast<SimGraph *>(exec)->ops)
    enqueue(stream, op);
  return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  delete reinterpret_cast<SimGraph *>(graph);
  return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  delete reinterpret_cast<SimGraph *>(exec);
  return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t *event) {
  *event = reinterpret_cast<cudaEvent_t>(new SimEvent());
  return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  delete reinterpret_cast<SimEvent *>(event);
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  Op op{Op::Record};
  op.event = event;
  return enqueue(stream, op);
}

// The runtime records its run split's events external (graph nodes when
// captured); a stream that runs each operation as enqueued has no other
// kind.
cudaError_t cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream,
                                     unsigned int) {
  return cudaEventRecord(event, stream);
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start,
                                 cudaEvent_t end) {
  auto *a = reinterpret_cast<SimEvent *>(start);
  auto *b = reinterpret_cast<SimEvent *>(end);
  if (!a->recorded || !b->recorded)
    return fail(cudaErrorNotReady);
  *ms = std::chrono::duration<float, std::milli>(b->at - a->at).count();
  return cudaSuccess;
}

} // extern "C"
