//===- sluice_gen/cpu_nn_dnnl.h - f32 convolutions through oneDNN -*- C++ -*-===//
//
// A float convolution of the cpu target as one oneDNN convolution primitive
// (Debian libdnnl-dev, linked with -ldnnl; its OpenMP runtime is the
// bundle's libgomp) with its bias. Activations are in Sluice's NCHW layout;
// with `blocked` the primitive picks its own layout (nChw8c/16c: oneDNN's
// direct and depthwise JIT kernels) and src and dst are reordered on each
// side of it inside the call, else it works on NCHW itself (oneDNN then
// picks its im2col GEMM, which measured no faster than Sluice's).
//
// What is built once and kept:
//   - the primitive, per thread count (oneDNN bakes the thread count of
//     its creation into the JIT kernels' work split), created on first use
//     under a lock and shared by every context and thread of the process
//     (a primitive is thread-safe to execute; its scratchpad is the
//     caller's, scratchpad_mode::user, from a per-thread buffer);
//   - the weights in the primitive's layout, reordered on first use from
//     the bundle's weights and kept in a sluice_scratch_buffer, so that
//     freeing the model's last instance frees them too (cpu_scratch.h);
//     they are keyed by the weights' address and redone when it changes
//     (a second instance of the same bundle, whose weights.bin is mapped
//     elsewhere: the values, fixed by the library's bundle id, are the
//     same, so a context reading the buffer while another refills it reads
//     the same numbers; only the reorder is repeated).
// The calling thread's OpenMP thread count is set to the run's for the
// execute and restored after it.
//
// Post-ops (a conv group's epilogue, codegen/cpu/groups/Conv.cpp): with
// `sum` the call adds a residual tensor of the output's shape (oneDNN's sum
// post-op: the residual is first copied, or reordered into the blocked
// layout, into the primitive's dst), with `relu` a ReLU follows (an eltwise
// post-op): out = relu(conv(x, w) + bias + residual) in one launch.
//
// Layouts kept across convolutions (codegen/cpu/groups/Conv.cpp plans
// them): an activation that only convolutions read is stored in oneDNN's
// blocked layout nChw{B}c (B = sluice_dnnl_block(): 16 where oneDNN runs
// AVX-512 kernels, else 8) by the convolution that writes it and read so by
// the ones that read it, as src or as the sum post-op's residual; the
// `sides` bits (SLUICE_DNNL_SRC_BLOCKED...) say which of a call's tensors
// are in it. A primitive still picks its own layouts (format_tag::any) and
// a side is reordered only where the two differ.
//
// sluice_dnnl_conv::run returns nonzero when oneDNN refuses the problem or
// memory runs out: the generated code then runs the im2col path instead
// (and applies the post-ops itself), on plain copies of the blocked sides
// (sluice_dnnl_plain_io).
//
//===----------------------------------------------------------------------===//
#ifndef SLUICE_GEN_CPU_NN_DNNL_H
#define SLUICE_GEN_CPU_NN_DNNL_H

#include "sluice_gen/cpu_nn.h"
#include "sluice_gen/cpu_scratch.h"

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <dnnl.hpp>
#include <omp.h>

namespace {

/// The process's one oneDNN cpu engine.
[[maybe_unused]] dnnl::engine &sluice_dnnl_engine() {
  static dnnl::engine *engine = new dnnl::engine(dnnl::engine::kind::cpu, 0);
  return *engine;
}

/// Sets the calling thread's OpenMP thread count for a scope.
struct sluice_omp_threads_scope {
  int saved;
  explicit sluice_omp_threads_scope(int threads) : saved(omp_get_max_threads()) {
    omp_set_num_threads(threads);
  }
  ~sluice_omp_threads_scope() { omp_set_num_threads(saved); }
};

/// Which tensors of a sluice_dnnl_conv call are in the blocked layout.
enum : unsigned {
  SLUICE_DNNL_SRC_BLOCKED = 1,
  SLUICE_DNNL_DST_BLOCKED = 2,
  SLUICE_DNNL_RESIDUAL_BLOCKED = 4,
};

/// The channel block of activations kept blocked between convolutions:
/// oneDNN's AVX-512 kernels work on nChw16c, its AVX2 and SSE ones on
/// nChw8c. The same in every call of a process.
[[maybe_unused]] int sluice_dnnl_block() {
  static const int block = [] {
    const unsigned isa = (unsigned)dnnl::get_effective_cpu_isa();
    const unsigned avx512 = (unsigned)dnnl::cpu_isa::avx512_core;
    return (isa & avx512) == avx512 ? 16 : 8;
  }();
  return block;
}

/// A blocked tensor (n, c, hw) <-> its plain NCHW copy; c is a multiple of
/// the block (the compiler keeps only such tensors blocked).
[[maybe_unused]] void sluice_dnnl_unblock(int threads, int64_t n, int64_t c, int64_t hw,
                                          const float *blocked, float *plain, bool toBlocked) {
  const int64_t b = sluice_dnnl_block(), cb = c / b;
#pragma omp parallel for collapse(2) num_threads(threads) if (n * c * hw > 65536)
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < cb; ++j)
      for (int64_t p = 0; p < hw; ++p)
        for (int64_t k = 0; k < b; ++k) {
          float *bp = (float *)blocked + ((i * cb + j) * hw + p) * b + k;
          float *pp = plain + (i * c + j * b + k) * hw + p;
          if (toBlocked)
            *bp = *pp;
          else
            *pp = *bp;
        }
}

/// Plain NCHW stand-ins for the blocked sides of a convolution call that
/// oneDNN refused: the generated im2col fallback reads `x` and `residual`
/// and writes `out`; finish() blocks `out` into the call's dst. Without
/// blocked sides they are the call's own pointers.
struct sluice_dnnl_plain_io {
  const float *x, *residual;
  float *out;

  sluice_dnnl_plain_io(int threads, unsigned sides, int64_t batch, int64_t channels,
                       int64_t outChannels, int64_t inHw, int64_t outHw, const float *x0,
                       float *out0, const float *residual0)
      : x(x0), residual(residual0), out(out0), threads(threads), sides(sides), batch(batch),
        outChannels(outChannels), outHw(outHw), dst(out0) {
    if (sides & SLUICE_DNNL_SRC_BLOCKED) {
      xs = (float *)std::malloc(sizeof(float) * batch * channels * inHw);
      if ((x = xs))
        sluice_dnnl_unblock(threads, batch, channels, inHw, x0, xs, false);
    }
    if (residual0 && (sides & SLUICE_DNNL_RESIDUAL_BLOCKED)) {
      rs = (float *)std::malloc(sizeof(float) * batch * outChannels * outHw);
      if ((residual = rs))
        sluice_dnnl_unblock(threads, batch, outChannels, outHw, residual0, rs, false);
    }
    if (sides & SLUICE_DNNL_DST_BLOCKED)
      out = os = (float *)std::malloc(sizeof(float) * batch * outChannels * outHw);
  }
  ~sluice_dnnl_plain_io() {
    std::free(xs);
    std::free(rs);
    std::free(os);
  }
  sluice_dnnl_plain_io(const sluice_dnnl_plain_io &) = delete;
  sluice_dnnl_plain_io &operator=(const sluice_dnnl_plain_io &) = delete;

  /// Whether every stand-in was allocated.
  bool ok() const { return x && out && (residual || !(sides & SLUICE_DNNL_RESIDUAL_BLOCKED)); }
  /// The result into the call's dst, blocked where it is.
  void finish() {
    if (os)
      sluice_dnnl_unblock(threads, batch, outChannels, outHw, dst, os, true);
  }

private:
  int threads;
  unsigned sides;
  int64_t batch, outChannels, outHw;
  float *dst;
  float *xs = nullptr, *rs = nullptr, *os = nullptr;
};

/// One convolution's geometry and bias, its primitives per thread count
/// and its reordered weights.
struct sluice_dnnl_conv {
  sluice_dnnl_conv(const sluice_window &g, int64_t batch, int64_t channels, int64_t outChannels,
                   int64_t group, bool hasBias, bool blocked, bool sum = false,
                   bool relu = false, unsigned sides = 0)
      : g(g), batch(batch), channels(channels), outChannels(outChannels), group(group),
        hasBias(hasBias), blocked(blocked), sum(sum), relu(relu), sides(sides) {}

  /// out = conv(x, w) + bias (+ residual with `sum`, then ReLU with `relu`)
  /// on `threads` threads. Nonzero when oneDNN cannot run it (the caller
  /// falls back). `residual` never overlaps `out` unless it is `out`.
  int run(int threads, const float *x, const float *w, const float *bias, float *out,
          const float *residual = nullptr) {
    if (sum && !residual)
      return 1;
    if (threads < 1)
      threads = 1;
    Built *p = get(threads);
    if (!p)
      return 1;
    try {
      const float *wp = weights(*p, w);
      if (!wp)
        return 1;
      sluice_omp_threads_scope scope(threads);
      static thread_local dnnl::stream *stream = nullptr;
      if (!stream)
        stream = new dnnl::stream(sluice_dnnl_engine());
      dnnl::engine &eng = sluice_dnnl_engine();
      static thread_local sluice_scratch_buffer pad, srcBuf, dstBuf;
      void *scratch = pad.get(p->scratchBytes ? p->scratchBytes : 1);
      if (!scratch)
        return 1;
      // src: in place, or reordered into the primitive's layout.
      void *src = (void *)x, *dst = (void *)out;
      if (p->srcReorder) {
        src = srcBuf.get(p->pd.src_desc().get_size());
        if (!src)
          return 1;
        dnnl::memory from(p->extSrc, eng, (void *)x), to(p->pd.src_desc(), eng, src);
        p->srcReorder.execute(*stream, from, to);
      }
      // dst: `out` itself when it has the primitive's layout, else a
      // buffer reordered into `out` after (also when the residual, in
      // another layout, is `out`: no reorder runs in place).
      const bool residualInPlace = sum && residual == out && p->residualReorder;
      if (p->dstReorder || residualInPlace) {
        dst = dstBuf.get(p->pd.dst_desc().get_size());
        if (!dst)
          return 1;
      }
      // The sum post-op adds what dst holds: the residual, in dst's layout.
      if (sum) {
        if (p->residualReorder) {
          dnnl::memory from(p->extResidual, eng, (void *)residual), to(p->pd.dst_desc(), eng, dst);
          p->residualReorder.execute(*stream, from, to);
        } else if (residual != dst) {
          std::memcpy(dst, residual, p->pd.dst_desc().get_size());
        }
      }
      dnnl::memory srcMem(p->pd.src_desc(), eng, src), wMem(p->pd.weights_desc(), eng, (void *)wp),
          dstMem(p->pd.dst_desc(), eng, dst),
          padMem(p->pd.scratchpad_desc(), eng, scratch);
      std::unordered_map<int, dnnl::memory> margs = {{DNNL_ARG_SRC, srcMem},
                                                     {DNNL_ARG_WEIGHTS, wMem},
                                                     {DNNL_ARG_DST, dstMem},
                                                     {DNNL_ARG_SCRATCHPAD, padMem}};
      if (hasBias)
        margs.insert({DNNL_ARG_BIAS, dnnl::memory(p->biasDesc, eng, (void *)bias)});
      p->prim.execute(*stream, margs);
      if (p->dstReorder) {
        dnnl::memory from(p->pd.dst_desc(), eng, dst), to(p->extDst, eng, (void *)out);
        p->dstReorder.execute(*stream, from, to);
      } else if (dst != (void *)out) {
        stream->wait();
        std::memcpy(out, dst, p->pd.dst_desc().get_size());
      }
      stream->wait();
    } catch (const dnnl::error &) {
      return 1;
    }
    return 0;
  }

  /// oneDNN's name for the implementation at `threads` threads ("" when
  /// it refuses the problem).
  const char *impl(int threads = 0) {
    Built *p = get(threads > 0 ? threads : omp_get_max_threads());
    return p ? p->name.c_str() : "";
  }

private:
  struct Built {
    int threads = 0;
    bool ok = false;
    dnnl::convolution_forward::primitive_desc pd;
    dnnl::convolution_forward prim;
    dnnl::memory::desc plainWeights, biasDesc;
    /// The layouts of the call's src, dst and residual: plain NCHW, or
    /// blocked for the `sides` bits.
    dnnl::memory::desc extSrc, extDst, extResidual;
    /// Between those and the primitive's layouts, where they differ.
    dnnl::reorder srcReorder, dstReorder;
    /// With `sum`: the residual into the primitive's dst layout.
    dnnl::reorder residualReorder;
    size_t scratchBytes = 0;
    std::string name;
    // The weights in pd.weights_desc()'s layout, for the weights at `key`.
    sluice_scratch_buffer packed;
    const float *key = nullptr;
    std::mutex weightsLock;
  };

  /// The primitive for `threads` threads (built on first use), or null
  /// when oneDNN refuses the problem.
  Built *get(int threads) {
    std::lock_guard<std::mutex> guard(lock);
    for (Built *b : built)
      if (b->threads == threads)
        return b->ok ? b : nullptr;
    Built *b = new Built;
    b->threads = threads;
    built.push_back(b);
    try {
      build(*b);
      b->ok = true;
    } catch (const dnnl::error &) {
      b->ok = false;
    }
    return b->ok ? b : nullptr;
  }

  void build(Built &b) {
    using namespace dnnl;
    using dt = memory::data_type;
    using tag = memory::format_tag;
    // 2-D when the leading (padding) dimension is trivial, else 3-D.
    const bool two = g.in[0] == 1 && g.k[0] == 1 && g.out[0] == 1 && g.pb[0] == 0 && g.pe[0] == 0;
    const int first = two ? 1 : 0;
    memory::dims src = {batch, channels}, dst = {batch, outChannels}, wts, strides, dil, pl, pr;
    if (group > 1)
      wts = {group, outChannels / group, channels / group};
    else
      wts = {outChannels, channels};
    for (int i = first; i < 3; ++i) {
      src.push_back(g.in[i]);
      dst.push_back(g.out[i]);
      wts.push_back(g.k[i]);
      strides.push_back(g.s[i]);
      dil.push_back(g.d[i] - 1);
      pl.push_back(g.pb[i]);
      pr.push_back(g.pe[i]);
    }
    const tag plain = two ? tag::nchw : tag::ncdhw;
    const tag plainW = group > 1 ? (two ? tag::goihw : tag::goidhw) : (two ? tag::oihw : tag::oidhw);
    // Blocked sides are 2-D (the compiler keeps only those blocked).
    const tag chwc = sluice_dnnl_block() == 16 ? tag::nChw16c : tag::nChw8c;
    const memory::desc plainSrc(src, dt::f32, plain), plainDst(dst, dt::f32, plain);
    b.extSrc = sides & SLUICE_DNNL_SRC_BLOCKED ? memory::desc(src, dt::f32, chwc) : plainSrc;
    b.extDst = sides & SLUICE_DNNL_DST_BLOCKED ? memory::desc(dst, dt::f32, chwc) : plainDst;
    b.extResidual =
        sides & SLUICE_DNNL_RESIDUAL_BLOCKED ? memory::desc(dst, dt::f32, chwc) : plainDst;
    b.plainWeights = memory::desc(wts, dt::f32, plainW);
    b.biasDesc = memory::desc({outChannels}, dt::f32, tag::x);
    memory::desc srcMd = blocked ? memory::desc(src, dt::f32, tag::any) : plainSrc;
    memory::desc dstMd = blocked ? memory::desc(dst, dt::f32, tag::any) : plainDst;
    memory::desc wMd(wts, dt::f32, tag::any);
    primitive_attr attr;
    attr.set_scratchpad_mode(scratchpad_mode::user);
    if (sum || relu) {
      post_ops ops;
      if (sum)
        ops.append_sum(1.f);
      if (relu)
        ops.append_eltwise(1.f, algorithm::eltwise_relu, 0.f, 0.f);
      attr.set_post_ops(ops);
    }
    sluice_omp_threads_scope scope(b.threads);
    engine &eng = sluice_dnnl_engine();
    auto desc = hasBias ? convolution_forward::desc(prop_kind::forward_inference,
                                                    algorithm::convolution_direct, srcMd, wMd,
                                                    b.biasDesc, dstMd, strides, dil, pl, pr)
                        : convolution_forward::desc(prop_kind::forward_inference,
                                                    algorithm::convolution_direct, srcMd, wMd,
                                                    dstMd, strides, dil, pl, pr);
    b.pd = convolution_forward::primitive_desc(desc, attr, eng);
    b.prim = convolution_forward(b.pd);
    b.scratchBytes = b.pd.scratchpad_desc().get_size();
    b.name = b.pd.impl_info_str();
    if (b.pd.src_desc() != b.extSrc)
      b.srcReorder = reorder(reorder::primitive_desc(eng, b.extSrc, eng, b.pd.src_desc()));
    if (b.pd.dst_desc() != b.extDst)
      b.dstReorder = reorder(reorder::primitive_desc(eng, b.pd.dst_desc(), eng, b.extDst));
    if (sum && b.pd.dst_desc() != b.extResidual)
      b.residualReorder =
          reorder(reorder::primitive_desc(eng, b.extResidual, eng, b.pd.dst_desc()));
  }

  /// The weights in the primitive's layout (reordered on first use).
  const float *weights(Built &b, const float *w) {
    std::lock_guard<std::mutex> guard(b.weightsLock);
    size_t bytes = b.pd.weights_desc().get_size();
    // capacity is 0 again after sluice_scratch_release (the model was freed).
    if (b.key == w && b.packed.capacity.load(std::memory_order_acquire) >= bytes && b.packed.raw)
      return (const float *)sluice_scratch_buffer::align(b.packed.raw);
    void *to = b.packed.get(bytes);
    if (!to)
      return nullptr;
    dnnl::engine &eng = sluice_dnnl_engine();
    dnnl::stream stream(eng);
    dnnl::memory from(b.plainWeights, eng, (void *)w), dst(b.pd.weights_desc(), eng, to);
    {
      sluice_omp_threads_scope scope(b.threads);
      dnnl::reorder(from, dst).execute(stream, from, dst);
      stream.wait();
    }
    b.key = w;
    return (const float *)to;
  }

  sluice_window g;
  int64_t batch, channels, outChannels, group;
  bool hasBias;
  bool blocked;
  bool sum, relu;
  unsigned sides;
  std::mutex lock;
  std::vector<Built *> built;
};

} // namespace

#endif // SLUICE_GEN_CPU_NN_DNNL_H
