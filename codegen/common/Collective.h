//===- Collective.h - a collective's library call, for both targets -*- C++ -*-===//
//
// A `collective` kernel group is one call through the run's communicator
// (sluice_gen/comm.h): the same call on cpu (host buffers, no stream) and
// cuda (device buffers, the step's stream). This builds it.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_CODEGEN_COMMON_COLLECTIVE_H
#define SLUICE_CODEGEN_COMMON_COLLECTIVE_H

#include "mlir/IR/Operation.h"

#include <string>

namespace sluice::codegen {

/// The statement that runs collective `op` from buffer `in` into `out`
/// (pointer expressions), failing the run (`return 1`) with the kernel's
/// name; `stream` is "0" on cpu. Fails with an error on `op` for an
/// element type the communicator does not carry.
mlir::FailureOr<std::string> collectiveCall(mlir::Operation *op, const std::string &kernel,
                                            const std::string &in, const std::string &out,
                                            const std::string &stream);

} // namespace sluice::codegen

#endif // SLUICE_CODEGEN_COMMON_COLLECTIVE_H
