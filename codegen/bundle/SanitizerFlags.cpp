//===- codegen/bundle/SanitizerFlags.cpp - a sanitizer build's flags ------===//

#include "codegen/bundle/SanitizerFlags.h"

namespace sluice::codegen {

std::vector<std::string> sanitizerCxxFlags() {
#ifdef SLUICE_SANITIZE_FLAGS
  std::vector<std::string> flags = {SLUICE_SANITIZE_FLAGS, "-fno-sanitize-recover=all",
                                    "-fno-omit-frame-pointer"};
  // As in the build of Sluice (CMakeLists.txt): no vptr check across code
  // with and without RTTI.
  if (flags[0].find("undefined") != std::string::npos)
    flags.push_back("-fno-sanitize=vptr");
  return flags;
#else
  return {};
#endif
}

} // namespace sluice::codegen
