#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <random>

#include "core/store_test_support.h"

using namespace shoal;
using namespace shoal::testing;

TEST_CASE("a store whose writer is SIGKILLed at random points reopens consistent",
          "[store][crash]") {
  TempDir dir;
  std::random_device rd;
  const uint64_t seed = rd();
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  constexpr int kRounds = 60;
  uint64_t chunks_seen = 0, temps_removed = 0;

  for (int round = 0; round < kRounds; ++round) {
    INFO("round " << round);
    std::string child_seed = std::to_string(rng());
    pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      ::execl(SHOAL_CRASH_WRITER, SHOAL_CRASH_WRITER, dir.path().c_str(), child_seed.c_str(),
              static_cast<char*>(nullptr));
      ::_exit(127);
    }
    // Anywhere from during its open to well into its writes.
    ::usleep(static_cast<useconds_t>(1000 + rng() % 60000));
    REQUIRE(::kill(pid, SIGKILL) == 0);
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    REQUIRE(WIFSIGNALED(status));  // it did not die of its own accord

    StoreOptions options = TestOptions(dir.path(), 4u << 20);
    options.verify_on_open = true;
    auto opened = ChunkStore::Open(options);
    REQUIRE(opened.ok());
    ChunkStore& store = **opened;
    StoreStats s = store.Stats();
    // A kill never leaves a visible chunk that fails verification.
    CHECK(s.corrupt_dropped == 0);
    CHECK(FilesUnder(dir.path() + "/tmp").empty());

    std::vector<ChunkId> ids = store.List();
    CHECK(FilesUnder(dir.path() + "/chunks").size() == ids.size());
    uint64_t total = 0;
    for (const ChunkId& id : ids) {
      auto data = ReadAll(store, id);
      REQUIRE(data.ok());
      CHECK(ChunkIdMatches(id, HashBlocks(data->data(), data->size())));
      total += data->size();
    }
    CHECK(store.Stats().used_bytes == total);
    CHECK(total <= options.capacity_bytes);
    chunks_seen += ids.size();
    temps_removed += s.open_temp_removed;
  }
  // The writer really wrote, and the kills really landed mid-write.
  CHECK(chunks_seen > 0);
  CHECK(temps_removed > 0);
}
