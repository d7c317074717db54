//===- Launch.cpp - sluice-run --ranks=N: start the ranks through mpirun --===//

#include "tools/sluice-run/Launch.h"
#include "tools/common/ToolSupport.h"

#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

namespace sluice::tools {

namespace {

/// `name` itself when it has a '/', else its first executable on PATH;
/// "" when there is none.
std::string findProgram(const std::string &name) {
  auto executable = [](const std::string &path) {
    struct stat info;
    return ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode) &&
           ::access(path.c_str(), X_OK) == 0;
  };
  if (name.find('/') != std::string::npos)
    return executable(name) ? name : "";
  const char *path = std::getenv("PATH");
  std::string folders = path ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= folders.size()) {
    size_t end = folders.find(':', start);
    if (end == std::string::npos)
      end = folders.size();
    std::string folder = folders.substr(start, end - start);
    std::string candidate = (folder.empty() ? "." : folder) + "/" + name;
    if (executable(candidate))
      return candidate;
    start = end + 1;
  }
  return "";
}

/// The output of `program --version` (its first 4 KiB), "" if it fails.
std::string versionOf(const std::string &program) {
  std::string command = "'" + program + "' --version 2>&1";
  std::FILE *pipe = ::popen(command.c_str(), "r");
  if (!pipe)
    return "";
  char buffer[4096];
  size_t n = std::fread(buffer, 1, sizeof buffer - 1, pipe);
  ::pclose(pipe);
  return std::string(buffer, n);
}

/// This program, as the ranks must run it.
std::string selfPath() {
  char buffer[4096];
  ssize_t n = ::readlink("/proc/self/exe", buffer, sizeof buffer - 1);
  if (n <= 0)
    die("sluice-run", "cannot find this program's own path (/proc/self/exe)");
  return std::string(buffer, n);
}

pid_t launcherChild = 0;

/// Ctrl-C reaches mpirun through the terminal's process group; a signal
/// sent to sluice-run alone (timeout, kill) is passed on, so that mpirun
/// ends the ranks.
void forwardSignal(int signal) {
  if (launcherChild > 0)
    ::kill(launcherChild, signal);
}

void setDefault(const char *name, const char *value) {
  ::setenv(name, value, /*overwrite=*/0);
}

} // namespace

int launchRanks(int ranks, const std::string &bundle,
                const std::vector<std::string> &arguments) {
  // What every rank would refuse alike is refused once, before N processes
  // start (the ranks read it with the same rule, runtime/comm).
  if (const char *timeout = std::getenv("SLUICE_COMM_TIMEOUT");
      timeout && *timeout) {
    char *end = nullptr;
    double seconds = std::strtod(timeout, &end);
    if (*end || !(seconds > 0) || !std::isfinite(seconds))
      die("sluice-run", std::string("SLUICE_COMM_TIMEOUT='") + timeout +
                            "' is not a number of seconds > 0");
  }
  const char *override = std::getenv("SLUICE_MPIRUN");
  std::string requested = override && *override ? override : "mpirun";
  std::string mpirun = findProgram(requested);
  if (mpirun.empty())
    die("sluice-run",
        "--ranks=" + std::to_string(ranks) + " starts the ranks with " +
            requested + ", which " +
            (override && *override ? std::string("does not exist")
                                   : std::string("is not on PATH")) +
            ": install Open MPI (scripts/setup.sh) or set SLUICE_MPIRUN, or "
            "start the ranks yourself (mpirun -np " +
            std::to_string(ranks) + " sluice-run ..., srun -n " +
            std::to_string(ranks) + " sluice-run ...)");

  std::vector<std::string> command = {mpirun, "-np", std::to_string(ranks)};
  std::string version = versionOf(mpirun);
  bool openMpi = version.find("Open MPI") != std::string::npos ||
                 version.find("OpenRTE") != std::string::npos;
  if (openMpi) {
    // More ranks than cores; no binding (a rank's OpenMP threads share the
    // cores the host gives it); the user's SLUICE_* settings to every rank.
    command.insert(command.end(), {"--oversubscribe", "--bind-to", "none"});
    for (char **variable = environ; *variable; ++variable)
      if (std::strncmp(*variable, "SLUICE_", 7) == 0) {
        const char *equals = std::strchr(*variable, '=');
        if (equals)
          command.insert(command.end(),
                         {"-x", std::string(*variable, equals - *variable)});
      }
    // Containers run as root, which Open MPI refuses unless told; and
    // Docker's default seccomp profile denies the ptrace that its
    // single-copy shared memory (CMA) needs. The user's own settings win.
    setDefault("OMPI_ALLOW_RUN_AS_ROOT", "1");
    setDefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    setDefault("OMPI_MCA_btl_vader_single_copy_mechanism", "none");
  }
  command.push_back(selfPath());
  command.insert(command.end(), arguments.begin(), arguments.end());

  std::fflush(stdout);
  std::fflush(stderr);
  pid_t child = ::fork();
  if (child < 0)
    die("sluice-run",
        std::string("cannot start mpirun: fork: ") + std::strerror(errno));
  if (child == 0) {
    std::vector<char *> argv;
    for (std::string &word : command)
      argv.push_back(word.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    std::fprintf(stderr, "sluice-run: error: cannot run %s: %s\n",
                 mpirun.c_str(), std::strerror(errno));
    ::_exit(127);
  }
  launcherChild = child;
  struct sigaction action = {};
  action.sa_handler = forwardSignal;
  ::sigemptyset(&action.sa_mask);
  for (int signal : {SIGTERM, SIGHUP, SIGINT})
    ::sigaction(signal, &action, nullptr);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  std::string how =
      "the " + std::to_string(ranks) + " ranks of '" + bundle + "'";
  if (WIFEXITED(status)) {
    int code = WEXITSTATUS(status);
    if (code == 0 || code == 1) // every rank ran; 1: an output mismatched
      return code;
    std::fprintf(stderr,
                 "sluice-run: error: %s did not all finish: mpirun exited "
                 "with status %d%s\n",
                 how.c_str(), code,
                 code == 2 ? " (a rank failed: its message is above)"
                           : " (a rank was killed or could not start: "
                             "mpirun's message is above)");
    return 2;
  }
  std::fprintf(stderr,
               "sluice-run: error: %s did not all finish: mpirun "
               "was killed by signal %d\n",
               how.c_str(), WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  return 2;
}

} // namespace sluice::tools
