// The precompiled part of every generated cpu translation unit
// (codegen/bundle/Precompiled.cpp): sluice_gen/cpu.h, which every cpu
// model includes first, and the system headers the cpu headers include,
// above all <immintrin.h> (about a second of parsing at -march=native).
// It holds no header whose meaning depends on a macro the model could set
// (cpu_int8.h, cpu_wonly.h, cpu_nn_blas.h): those are parsed per model.
// Compiled once per compiler, flags and header contents; a model includes
// it with -include, and the compiler parses it as text when the
// precompiled form does not match.
#ifndef SLUICE_GEN_CPU_PCH_H
#define SLUICE_GEN_CPU_PCH_H

#include "sluice_gen/cpu.h"

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
