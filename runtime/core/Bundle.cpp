//===- Bundle.cpp - load a bundle: manifest, weights, library -------------===//
//
// The manifest is checked before anything else is touched, so a bundle for
// another target or version is refused without dlopening code built for it.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/Bundle.h"
#include "runtime/core/Paths.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace {

/// Checks that `file` is a complete ELF shared object before dlopen maps it:
/// the loader maps segments by the sizes the headers claim, so a truncated
/// library would fault (SIGBUS) on first touch instead of failing to load.
bool checkElf(const std::string &file, std::string &error) {
  int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error = file + ": cannot load the model library: " + std::strerror(errno);
    return false;
  }
  struct stat st;
  Elf64_Ehdr header;
  bool ok = ::fstat(fd, &st) == 0 &&
            ::pread(fd, &header, sizeof header, 0) == (ssize_t)sizeof header &&
            std::memcmp(header.e_ident, ELFMAG, SELFMAG) == 0 &&
            header.e_ident[EI_CLASS] == ELFCLASS64;
  uint64_t size = ok ? (uint64_t)st.st_size : 0;
  auto within = [&](uint64_t offset, uint64_t bytes) {
    return offset <= size && bytes <= size - offset;
  };
  ok = ok && header.e_phentsize == sizeof(Elf64_Phdr) &&
       within(header.e_phoff, (uint64_t)header.e_phnum * sizeof(Elf64_Phdr)) &&
       within(header.e_shoff, (uint64_t)header.e_shnum * header.e_shentsize);
  for (unsigned i = 0; ok && i < header.e_phnum; ++i) {
    Elf64_Phdr segment;
    ok = ::pread(fd, &segment, sizeof segment, header.e_phoff + i * sizeof segment) ==
             (ssize_t)sizeof segment &&
         within(segment.p_offset, segment.p_filesz);
  }
  ::close(fd);
  if (!ok)
    error = file + ": not a complete 64-bit ELF shared library (truncated or corrupt)";
  return ok;
}

/// OpenBLAS picks its kernels when it is loaded (with the model library).
/// The 0.3.21 that Debian 12 ships does not know AVX-512 AMD cores (Zen 4)
/// and runs its AVX2 Haswell kernels there, about 1.5x slower on the GEMMs
/// of a transformer than its SkylakeX (AVX-512) kernels, which run fine on
/// any core with AVX-512 F/BW/DQ/VL. A user's own OPENBLAS_CORETYPE wins.
/// Done once per process (std::call_once), at the first bundle load: a
/// setenv on every load would race every getenv of the host program's
/// other threads each time. The first load is where a host program that
/// cares can order it (load before starting threads that read the
/// environment; docs/runtime.md).
void preferAvx512Blas() {
#if defined(__x86_64__) && defined(__GNUC__)
  static std::once_flag once;
  std::call_once(once, [] {
    if (std::getenv("OPENBLAS_CORETYPE"))
      return;
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
      ::setenv("OPENBLAS_CORETYPE", "SkylakeX", 0);
  });
#endif
}

/// How many loaded bundles hold each library handle. dlopen gives the same
/// handle to every load of one library (the same bundle loaded twice, or
/// as two ranks), and its threads' scratch may only be freed when the last
/// of them goes: until then a context of another may be running.
struct LibraryUsers {
  std::mutex lock;
  std::map<void *, int> count;
};

LibraryUsers &libraryUsers() {
  static LibraryUsers *users = new LibraryUsers; // outlives static destructors
  return *users;
}

} // namespace

namespace sluice::runtime {

namespace {
/// What a bundle without weights gets, so kernels never see a null pointer.
alignas(64) const unsigned char kNoWeights[64] = {};
} // namespace

std::unique_ptr<Bundle> Bundle::load(const std::string &dir, int32_t rank,
                                     std::string &error) {
  std::unique_ptr<Bundle> bundle(new Bundle());
  bundle->dir_ = dir;
  struct stat info;
  if (::stat(dir.c_str(), &info) != 0) {
    error = "bundle '" + dir + "': " + std::strerror(errno);
    return nullptr;
  }
  if (!S_ISDIR(info.st_mode)) {
    error = "bundle '" + dir +
            "' is not a folder (a bundle is the folder "
            "sluice-compile writes)";
    return nullptr;
  }
  if (!readManifest(dir, bundle->manifest_, error))
    return nullptr;
  int64_t world = bundle->manifest_.worldSize;
  if (rank == kSingleRank && world > 1) {
    error = "bundle '" + dir + "' is planned for " + std::to_string(world) +
            " ranks: run it with sluice-run --ranks=" + std::to_string(world) +
            ", or load one rank of it under MPI (sluice_model_load_rank, "
            "docs/parallel.md)";
    return nullptr;
  }
  if (rank != kSingleRank && (rank < 0 || rank >= world)) {
    error = "bundle '" + dir + "' has " + std::to_string(world) +
            (world == 1 ? " rank" : " ranks") + " (0.." +
            std::to_string(world - 1) + "); there is no rank " +
            std::to_string(rank);
    return nullptr;
  }
  bundle->rank_ = rank == kSingleRank ? 0 : rank;
  if (!bundle->mapWeights(error) || !bundle->openLibrary(error))
    return nullptr;
  return bundle;
}

bool Bundle::mapWeights(std::string &error) {
  const WeightsFile &weights = manifest_.weights[rank_];
  std::string file = joinPath(dir_, weights.file);
  uint64_t expected = weights.bytes;
  int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    // No weights: the file may be left out.
    if (errno == ENOENT && expected == 0) {
      weights_ = kNoWeights;
      return true;
    }
    std::string whose = manifest_.worldSize > 1
                            ? "rank " + std::to_string(rank_) + "'s weights"
                            : std::string("the bundle's weights");
    error = file + ": cannot open " + whose + ": " + std::strerror(errno);
    return false;
  }
  struct stat info;
  if (::fstat(fd, &info) != 0) {
    error = file + ": " + std::strerror(errno);
    ::close(fd);
    return false;
  }
  if ((uint64_t)info.st_size != expected) {
    error = file + ": is " + std::to_string((uint64_t)info.st_size) +
            " bytes, the manifest says " + std::to_string(expected) +
            (info.st_size < (off_t)expected ? " (truncated?)" : "");
    ::close(fd);
    return false;
  }
  if (expected == 0) {
    ::close(fd);
    weights_ = kNoWeights;
    return true;
  }
  void *mapping = ::mmap(nullptr, expected, PROT_READ, MAP_PRIVATE, fd, 0);
  int mapErrno = errno;
  ::close(fd);
  if (mapping == MAP_FAILED) {
    error = file + ": cannot map: " + std::strerror(mapErrno);
    return false;
  }
  mapping_ = mapping;
  mappedBytes_ = expected;
  weights_ = static_cast<const unsigned char *>(mapping);
  if (!weights.fingerprint.empty()) {
    // Ties the weights to the manifest: a weights file of another compile
    // of the same size would otherwise run silently with wrong values.
    char found[17];
    std::snprintf(found, sizeof found, "%016llx",
                  (unsigned long long)sluice_weights_fingerprint(weights_, expected));
    if (weights.fingerprint != found) {
      error = file + ": does not belong to this bundle (fingerprint " + found +
              ", the manifest says " + weights.fingerprint +
              "): a weights file of another compile";
      return false;
    }
  }
  return true;
}

bool Bundle::openLibrary(std::string &error) {
  // joinPath keeps a '/' in the name, so dlopen never searches
  // LD_LIBRARY_PATH for another model.so.
  std::string file = joinPath(dir_, manifest_.library);
  if (file.find('/') == std::string::npos)
    file = "./" + file;
  // RTLD_LOCAL: two bundles loaded at once must not resolve each other's
  // symbols; RTLD_NOW: a missing OpenBLAS symbol fails here, not mid-run.
  if (!checkElf(file, error))
    return false;
  preferAvx512Blas();
  // RTLD_NODELETE: the library's OpenMP runtime keeps worker threads parked
  // after a run; unmapping it at sluice_model_free would pull libgomp from
  // under them (a crash at exit, or at the next model load).
  library_ = ::dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!library_) {
    const char *why = ::dlerror();
    error = file +
            ": cannot load the model library: " + (why ? why : "unknown error");
    if (manifest_.target == "cuda")
      error += " (a cuda bundle's library needs the CUDA runtime, cuBLASLt "
               "and cuDNN libraries on the library path)";
    return false;
  }
  {
    LibraryUsers &users = libraryUsers();
    std::lock_guard<std::mutex> guard(users.lock);
    ++users.count[library_];
  }
  releaseScratch_ =
      reinterpret_cast<void (*)()>(::dlsym(library_, "sluice_model_release_scratch"));
  auto abi = reinterpret_cast<int32_t (*)()>(
      ::dlsym(library_, "sluice_model_abi_version"));
  // A bundle of shape variants: one run function per variant (the
  // manifest's "variants[i].entry"), and no sluice_model_run.
  std::vector<std::string> entries;
  for (const VariantSpec &variant : manifest_.variants)
    entries.push_back(variant.entry);
  if (entries.empty())
    entries.push_back("sluice_model_run");
  for (const std::string &entry : entries) {
    auto run = reinterpret_cast<int32_t (*)(const SluiceRunArgs *)>(
        ::dlsym(library_, entry.c_str()));
    if (!abi || !run) {
      error = file + ": not a Sluice model library (it does not export " +
              (abi ? entry : "sluice_model_abi_version") + ")";
      return false;
    }
    runs_.push_back(run);
  }
  run_ = runs_.front();
  int32_t version = abi();
  if (version != SLUICE_BUNDLE_ABI_VERSION) {
    error = file + ": the library has bundle ABI " + std::to_string(version) +
            "; this runtime supports ABI " +
            std::to_string(SLUICE_BUNDLE_ABI_VERSION);
    return false;
  }
  if (!manifest_.bundleId.empty()) {
    // Ties the library to the manifest (and so to the weights).
    auto id = reinterpret_cast<const char *(*)()>(::dlsym(library_, "sluice_model_bundle_id"));
    const char *got = id ? id() : nullptr;
    if (!got || manifest_.bundleId != got) {
      error = file + ": " +
              (got ? "was built for bundle " + std::string(got) + ", the manifest says " +
                         manifest_.bundleId
                   : std::string("exports no sluice_model_bundle_id, the manifest says ") +
                         manifest_.bundleId) +
              " (a library and a manifest of different compiles)";
      return false;
    }
  }
  if (manifest_.target != "cuda")
    return true;
  // A cuda bundle keeps per-context device state (library handles,
  // workspaces) and reports asynchronous failures after a synchronize.
  init_ = reinterpret_cast<int32_t (*)(void **, void *, char *, size_t)>(
      ::dlsym(library_, "sluice_model_init"));
  release_ =
      reinterpret_cast<void (*)(void *)>(::dlsym(library_, "sluice_model_release"));
  check_ = reinterpret_cast<int32_t (*)(void *, char *, size_t)>(
      ::dlsym(library_, "sluice_model_check"));
  const char *missing = !init_      ? "sluice_model_init"
                        : !release_ ? "sluice_model_release"
                        : !check_   ? "sluice_model_check"
                                    : nullptr;
  if (missing) {
    error = file + ": the bundle targets cuda but its library does not "
                   "export " +
            missing;
    return false;
  }
  return true;
}

Bundle::~Bundle() {
  if (library_) {
    // The library stays mapped (RTLD_NODELETE) and OpenMP's threads stay
    // parked, so their per-thread scratch would outlive the model: the last
    // bundle of the library frees it. Contexts share ownership of their
    // bundle, so no run of it is in flight here.
    LibraryUsers &users = libraryUsers();
    std::lock_guard<std::mutex> guard(users.lock);
    auto it = users.count.find(library_);
    if (it != users.count.end() && --it->second == 0) {
      users.count.erase(it);
      if (releaseScratch_)
        releaseScratch_();
    }
    ::dlclose(library_);
  }
  if (mapping_)
    ::munmap(mapping_, mappedBytes_);
}

} // namespace sluice::runtime
