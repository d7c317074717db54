//===- Precompiled.cpp - The generated code's precompiled header ----------===//

#include "codegen/bundle/Precompiled.h"

#include "lib/support/CacheFolder.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Chrono.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/xxhash.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <unistd.h>

namespace sluice::codegen {
namespace {

/// Folders of other compilers, flags or headers kept beside a new one (the
/// most recently built); older ones go once they are an hour old.
constexpr size_t kKeptHeaders = 8;

std::string join(llvm::StringRef dir, llvm::StringRef name) {
  llvm::SmallString<256> path(dir);
  llvm::sys::path::append(path, name);
  return std::string(path);
}

/// Folds a file's name and bytes into `state` (an unreadable file: its
/// name only, so that the key still changes when it becomes readable).
void hashFile(const std::string &path, std::string &state) {
  state += path;
  state += '\0';
  if (auto buffer = llvm::MemoryBuffer::getFile(path))
    state += llvm::utohexstr(llvm::xxh3_64bits(
        llvm::arrayRefFromStringRef((*buffer)->getBuffer())));
  state += '\0';
}

/// The key of a precompiled header: the compiler (its resolved path, size
/// and modification time), every flag and -I folder, and the bytes of
/// Sluice's own headers under those folders (sluice_gen/, sluice/, with
/// their subfolders). The system headers belong to the compiler and the
/// packages it was given.
std::string keyOf(const std::vector<std::string> &compile) {
  std::string state;
  llvm::SmallString<256> real;
  if (!llvm::sys::fs::real_path(compile.front(), real)) {
    state += std::string(real);
    llvm::sys::fs::file_status status;
    if (!llvm::sys::fs::status(real, status))
      state += " " + std::to_string(status.getSize()) + " " +
               std::to_string(status.getLastModificationTime().time_since_epoch().count());
  }
  state += '\0';
  for (size_t i = 1; i < compile.size(); ++i) {
    state += compile[i];
    state += '\0';
    llvm::StringRef arg(compile[i]);
    if (!arg.consume_front("-I"))
      continue;
    for (const char *own : {"sluice_gen", "sluice"}) {
      std::vector<std::string> files;
      std::error_code ec;
      for (llvm::sys::fs::recursive_directory_iterator it(join(arg, own), ec), end;
           it != end && !ec; it.increment(ec))
        if (llvm::sys::fs::is_regular_file(it->path()))
          files.push_back(it->path());
      std::sort(files.begin(), files.end());
      for (const std::string &file : files)
        hashFile(file, state);
    }
  }
  return llvm::utohexstr(llvm::xxh3_64bits(llvm::arrayRefFromStringRef(state)), true, 16);
}

/// Removes the oldest folders beside `keep` beyond kKeptHeaders, each only
/// once it is an hour old (a compile may still be reading a younger one).
void prune(const std::string &root, const std::string &keep) {
  struct Entry {
    std::string dir;
    llvm::sys::TimePoint<> built;
  };
  std::vector<Entry> entries;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(root, ec), end; it != end && !ec; it.increment(ec)) {
    auto status = it->status();
    if (it->path() == keep || !status ||
        status->type() != llvm::sys::fs::file_type::directory_file)
      continue;
    entries.push_back({it->path(), status->getLastModificationTime()});
  }
  if (entries.size() <= kKeptHeaders)
    return;
  std::sort(entries.begin(), entries.end(),
            [](const Entry &a, const Entry &b) { return a.built > b.built; });
  auto hourAgo = std::chrono::system_clock::now() - std::chrono::hours(1);
  for (size_t i = kKeptHeaders; i < entries.size(); ++i)
    if (entries[i].built < hourAgo)
      llvm::sys::fs::remove_directories(entries[i].dir);
}

} // namespace

std::string precompiledHeaderRoot() { return userCacheFolder("SLUICE_PCH_DIR", "pch"); }

std::string precompiledHeader(const std::vector<std::string> &compile, bool progress) {
  std::string root = precompiledHeaderRoot();
  if (root.empty() || compile.empty())
    return "";
  std::string dir = join(root, keyOf(compile));
  std::string header = join(dir, "sluice_pch.h"), built = header + ".gch";
  if (llvm::sys::fs::exists(built) && llvm::sys::fs::exists(header))
    return header;
  auto note = [&](const std::string &why) {
    if (progress)
      std::fprintf(stderr,
                   "sluice-compile: note: no precompiled header (%s); the headers are parsed "
                   "with the model\n",
                   why.c_str());
    return std::string();
  };
  if (std::error_code ec = llvm::sys::fs::create_directories(dir))
    return note(dir + ": " + ec.message());
  // Each writer builds its own files and renames them into place: a
  // concurrent compile sees the old state or the whole new one.
  std::string unique = "." + std::to_string(::getpid()) + ".tmp";
  std::string text = "// Sluice's precompiled header (codegen/bundle/Precompiled.cpp)\n"
                     "#include \"sluice_gen/cpu_pch.h\"\n";
  if (!llvm::sys::fs::exists(header)) {
    std::error_code ec;
    {
      llvm::raw_fd_ostream out(header + unique, ec);
      if (!ec)
        out << text;
    }
    if (ec || llvm::sys::fs::rename(header + unique, header))
      return note(header + ": cannot write");
  }
  if (progress)
    std::fprintf(stderr,
                 "sluice-compile: precompiling the generated code's headers into %s (once for "
                 "this compiler and these flags)\n",
                 dir.c_str());
  auto start = std::chrono::steady_clock::now();
  std::vector<std::string> args = compile;
  args.insert(args.end(), {"-x", "c++-header", header, "-o", built + unique});
  std::vector<llvm::StringRef> refs(args.begin(), args.end());
  std::string log = join(dir, "build" + unique + ".log"), execError;
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, llvm::StringRef(log),
                                                llvm::StringRef(log)};
  int rc = llvm::sys::ExecuteAndWait(args.front(), refs, std::nullopt, redirects, 0, 0,
                                     &execError);
  if (rc != 0) {
    std::string why = "the C++ compiler failed on " + header + ": " +
                      (execError.empty() ? firstCompilerError(log) : execError);
    llvm::sys::fs::remove(built + unique);
    llvm::sys::fs::remove(log);
    return note(why);
  }
  llvm::sys::fs::remove(log);
  if (llvm::sys::fs::rename(built + unique, built)) {
    llvm::sys::fs::remove(built + unique);
    return llvm::sys::fs::exists(built) ? header : note(built + ": cannot write");
  }
  if (progress)
    std::fprintf(stderr, "sluice-compile: precompiled in %.1f s\n",
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  prune(root, dir);
  return header;
}

std::string firstCompilerError(const std::string &log) {
  auto buffer = llvm::MemoryBuffer::getFile(log);
  if (!buffer)
    return "";
  llvm::SmallVector<llvm::StringRef> lines;
  (*buffer)->getBuffer().split(lines, '\n');
  for (llvm::StringRef line : lines)
    if (line.contains("error"))
      return line.trim().str();
  return lines.empty() ? "" : lines.front().trim().str();
}

} // namespace sluice::codegen
