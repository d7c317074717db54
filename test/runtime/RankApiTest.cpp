//===- RankApiTest.cpp - the multi-rank C API, on every rank --------------===//
//
//   mpirun -np W sluice-rank-api-test BUNDLE [--transport=TEXT] [--graph]
//
// Runs each rank of a collective test bundle (CollectiveModel.cpp) through
// the C++ wrapper of the C API and checks, on every rank: the
// communicator's queries, broadcast and agreement; the refusals (a model of
// another rank, freeing a communicator with a live context); three runs'
// outputs against BUNDLE/expected (a cuda bundle's second run is captured
// and the third replays it: --graph checks that it did); the transport's
// name (--transport). Prints one line per failed check; exit 0 when all
// hold on this rank.
//
//===----------------------------------------------------------------------===//

#include "sluice/runtime.hpp"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

int rank = -1;
int failures = 0;

void expect(bool condition, const std::string &what) {
  if (!condition) {
    std::fprintf(stderr, "rank %d: FAILED: %s\n", rank, what.c_str());
    ++failures;
  }
}

/// The data of a .npy file (MakeCollectiveBundle.cpp writes version 1.0).
std::string npyData(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  if (bytes.size() < 10)
    return "";
  size_t header = (unsigned char)bytes[8] | (unsigned char)bytes[9] << 8;
  return bytes.substr(10 + header);
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: sluice-rank-api-test BUNDLE "
                         "[--transport=TEXT] [--graph]\n");
    return 2;
  }
  std::string bundle = argv[1], transport;
  bool graph = false;
  for (int i = 2; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--transport=", 0) == 0)
      transport = arg.substr(12);
    else if (arg == "--graph")
      graph = true;
  }
  std::string error;
  sluice::rt::Communicator comm;
  if (!comm.init(&error)) {
    std::fprintf(stderr, "sluice_comm_init: %s\n", error.c_str());
    return 2;
  }
  rank = comm.rank();
  int world = comm.worldSize();
  SluiceLaunchInfo launch = sluice::rt::launchInfo();
  expect(launch.in_job && launch.rank == rank && launch.world_size == world,
         "the launcher's environment agrees with MPI");
  expect(comm.localSize() == world && comm.localRank() == rank,
         "every rank is on this host");

  // Host collectives.
  int value = rank == world - 1 ? 4242 : -1;
  expect(comm.broadcast(&value, sizeof value, world - 1, &error) &&
             value == 4242,
         "broadcast from the last rank: " + error);
  bool allOk = false;
  int32_t first = -2;
  expect(comm.agree(true, allOk, &first, &error) && allOk && first == -1,
         "every rank agrees: " + error);
  expect(comm.agree(rank != 1, allOk, &first, &error) && !allOk && first == 1,
         "every rank learns that rank 1 is not ready");

  // A model of another rank is refused.
  sluice::rt::Model model, other;
  expect(model.loadRank(bundle, rank, &error), "loads its rank: " + error);
  expect(other.loadRank(bundle, (rank + 1) % world, &error),
         "loads the next rank: " + error);
  sluice::rt::Context wrong;
  expect(!wrong.createRank(other, comm, &error) &&
             error.find("was loaded as rank " +
                        std::to_string((rank + 1) % world) +
                        "; this process is rank " + std::to_string(rank)) !=
                 std::string::npos,
         "refuses another rank's model: " + error);

  sluice::rt::Context context;
  if (!context.createRank(model, comm, &error)) {
    expect(false, "sluice_context_create_rank: " + error);
    return 1;
  }
  expect(transport.empty() || context.commTransport() == transport,
         "transport '" + context.commTransport() + "' is '" + transport + "'");
  SluiceStatus status = sluice_comm_free(comm.get());
  expect(status == SLUICE_ERROR_INVALID_ARGUMENT &&
             std::string(sluice_last_error()) ==
                 "sluice_comm_free: 1 context(s) made with this communicator "
                 "are not freed",
         std::string("a communicator with a live context is not freed: ") +
             sluice_last_error());

  std::string x = npyData(bundle + "/inputs/x.npy");
  expect(context.setInput(0, x.data(), x.size(), &error), "input: " + error);
  for (int run = 1; run <= 3; ++run) {
    if (!context.run(&error)) {
      expect(false, "run " + std::to_string(run) + ": " + error);
      break;
    }
    for (size_t i = 0; i < model.numOutputs(); ++i) {
      std::string name = model.output(i).name;
      std::string want = npyData(bundle + "/expected/" + name + ".npy");
      size_t bytes = 0;
      const void *got = context.output(i, &bytes);
      expect(bytes == want.size() && std::memcmp(got, want.data(), bytes) == 0,
             "run " + std::to_string(run) + ": output '" + name +
                 "' holds what every rank must");
    }
  }
  std::string reason;
  expect(!graph || context.replayedCudaGraph(&reason),
         "the third run replayed a CUDA graph (" + reason + ")");

  context = sluice::rt::Context();
  wrong = sluice::rt::Context();
  expect(comm.free(&error), "leaves the job: " + error);
  if (failures == 0)
    std::printf("rank %d of %d: every check holds (%s)\n", rank, world,
                transport.empty() ? "mpi" : transport.c_str());
  return failures ? 1 : 0;
}
