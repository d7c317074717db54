//===- GpuArch.cpp - which of a bundle's GPU codes a device can run -------===//
//
// The rules are the CUDA compatibility rules of the CUDA C++ Programming
// Guide ("Binary Compatibility", "Application Compatibility"): cubins are
// forward compatible within a major version only, PTX across majors.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/GpuArch.h"

#include <cctype>

namespace sluice::runtime {

bool parseGpuArch(const std::string &text, GpuArch &arch) {
  std::string digits;
  if (text.rfind("sm_", 0) == 0) {
    arch.code = GpuArch::Code::Cubin;
    digits = text.substr(3);
  } else if (text.rfind("compute_", 0) == 0) {
    arch.code = GpuArch::Code::Ptx;
    digits = text.substr(8);
  } else {
    return false;
  }
  arch.variant = GpuArch::Variant::Plain;
  if (!digits.empty() && (digits.back() == 'a' || digits.back() == 'f')) {
    arch.variant = digits.back() == 'a' ? GpuArch::Variant::Specific
                                        : GpuArch::Variant::Family;
    digits.pop_back();
  }
  // Two or three digits: sm_80, sm_100. More would be no architecture.
  if (digits.size() < 2 || digits.size() > 3)
    return false;
  for (char c : digits)
    if (!std::isdigit((unsigned char)c))
      return false;
  arch.major = std::stoi(digits.substr(0, digits.size() - 1));
  arch.minor = digits.back() - '0';
  return arch.major > 0;
}

bool gpuArchRuns(const GpuArch &arch, int major, int minor) {
  switch (arch.variant) {
  case GpuArch::Variant::Specific:
    return major == arch.major && minor == arch.minor;
  case GpuArch::Variant::Family:
    return major == arch.major && minor >= arch.minor;
  case GpuArch::Variant::Plain:
    break;
  }
  if (arch.code == GpuArch::Code::Cubin)
    return major == arch.major && minor >= arch.minor;
  return major > arch.major || (major == arch.major && minor >= arch.minor);
}

int pickGpuArch(const std::vector<std::string> &architectures, int major,
                int minor) {
  int best = -1;
  GpuArch bestArch;
  for (size_t i = 0; i < architectures.size(); ++i) {
    GpuArch arch;
    if (!parseGpuArch(architectures[i], arch) ||
        !gpuArchRuns(arch, major, minor))
      continue;
    auto rank = [](const GpuArch &a) {
      // Cubins first, then the newest capability.
      return (a.code == GpuArch::Code::Cubin ? 1000000 : 0) + a.major * 100 +
             a.minor * 10 + (a.variant != GpuArch::Variant::Plain ? 1 : 0);
    };
    if (best < 0 || rank(arch) > rank(bestArch)) {
      best = (int)i;
      bestArch = arch;
    }
  }
  return best;
}

std::string gpuArchMismatch(const std::string &bundleDir,
                            const std::string &gpuName, int major, int minor,
                            const std::vector<std::string> &architectures) {
  std::string list;
  for (const std::string &arch : architectures)
    list += (list.empty() ? "" : ", ") + arch;
  return "bundle '" + bundleDir + "' cannot run on " + gpuName + " (sm_" +
         std::to_string(major) + std::to_string(minor) +
         "): it carries code for [" + list +
         "] (a cubin runs on its major version with the same or a newer "
         "minor, PTX on its version or newer): compile it for this GPU "
         "(sluice-compile --gpu-arch=sm_" +
         std::to_string(major) + std::to_string(minor) + ")";
}

} // namespace sluice::runtime
