// The precompiled part of every generated cpu translation unit
// (codegen/bundle/Precompiled.cpp): every cpu header of the generated code
// and the system headers under them, above all <immintrin.h> (about a
// second of parsing at -march=native). Generated code defines no macro
// before its includes (the headers' configuration macros, such as
// SLUICE_INT8_ISA, follow the compiler's flags), so one precompiled header
// serves every model: one that does not call a header's functions pays
// only for loading it. Compiled once per compiler, flags and header
// contents; a model includes it with -include, and the compiler parses it
// as text when the precompiled form does not match.
#ifndef SLUICE_GEN_CPU_PCH_H
#define SLUICE_GEN_CPU_PCH_H

#include "sluice_gen/cpu.h"
#include "sluice_gen/comm.h"
#include "sluice_gen/cpu_attention.h"
#include "sluice_gen/cpu_blas.h"
#include "sluice_gen/cpu_dynamic.h"
#include "sluice_gen/cpu_gemm.h"
#include "sluice_gen/cpu_int8.h"
#include "sluice_gen/cpu_moe.h"
#include "sluice_gen/cpu_movement.h"
#include "sluice_gen/cpu_nn.h"
#include "sluice_gen/cpu_nn_blas.h"
#include "sluice_gen/cpu_reduce.h"
#include "sluice_gen/cpu_wonly.h"
#if __has_include(<dnnl.hpp>)
// oneDNN's C++ API (convolutions, cpu_nn_dnnl.h): parsing dnnl.hpp costs
// more than the rest of a small CNN's build. Nothing of it is compiled
// into a model that does not run a oneDNN primitive, nor linked.
#include "sluice_gen/cpu_nn_dnnl.h"
#endif

#include <algorithm>
#include <atomic>
#include <cblas.h>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <immintrin.h>
#include <memory>
#include <mutex>
#include <new>
#include <type_traits>
#include <vector>

#endif // SLUICE_GEN_CPU_PCH_H
