#include <errno.h>
#include <sys/mount.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>

#include "core/store_test_support.h"

using namespace shoal;
using namespace shoal::testing;

namespace {

// A 64 MiB tmpfs mounted for one test, unmounted on destruction.
class SmallTmpfs {
 public:
  explicit SmallTmpfs(const std::string& path) : path_(path) {
    ::mkdir(path.c_str(), 0755);
    if (::mount("tmpfs", path.c_str(), "tmpfs", 0, "size=64m") == 0) {
      mounted_ = true;
    } else {
      error_ = std::strerror(errno);
    }
  }
  ~SmallTmpfs() {
    if (mounted_ && ::umount(path_.c_str()) != 0) ::umount2(path_.c_str(), MNT_DETACH);
  }
  bool mounted() const { return mounted_; }
  const std::string& error() const { return error_; }

 private:
  std::string path_;
  bool mounted_ = false;
  std::string error_;
};

}  // namespace

TEST_CASE("on a full disk the store evicts, then fails clearly, then recovers",
          "[store][diskfull]") {
  TempDir dir;
  SmallTmpfs fs(dir.path() + "/mnt");
  if (!fs.mounted()) {
    WARN("SKIPPED: cannot mount a 64 MiB tmpfs ("
         << fs.error() << "); run the tests as root to cover a full disk");
    return;
  }
  std::string store_dir = dir.path() + "/mnt/cache";
  std::string filler = dir.path() + "/mnt/other-program.bin";
  // Another program holds 40 MiB of the 64; the store's budget is far larger
  // than the disk, so the disk, not the budget, runs out.
  WriteWholeFile(filler, std::vector<uint8_t>(40u << 20, 0xab));
  constexpr size_t kChunk = 4u << 20;
  {
    auto store = OpenOrDie(TestOptions(store_dir, 1ull << 30));

    // Ten 4 MiB chunks cannot all fit in ~24 MiB: older ones are evicted.
    std::vector<TestChunk> chunks;
    for (int i = 0; i < 10; ++i) {
      chunks.push_back(MakeChunk(100 + i, kChunk));
      Status s = store->Put(chunks[i].id, chunks[i].data.data(), kChunk);
      REQUIRE(s.ok());
    }
    StoreStats s = store->Stats();
    CHECK(s.evictions > 0);
    CHECK(store->Contains(chunks[9].id));
    CHECK(s.used_bytes == s.chunks * kChunk);  // the filler is not counted

    // With every chunk pinned, nothing can go: the write fails at once.
    std::vector<PinHandle> pins;
    for (const ChunkId& id : store->List()) {
      auto pin = store->Pin(id);
      REQUIRE(pin.ok());
      pins.push_back(std::move(*pin));
    }
    // Puts fill what room is left, then one fails.
    TestChunk extra;
    Status full;
    std::vector<std::string> files_before;
    for (int i = 0; i < 8 && full.ok(); ++i) {
      files_before = FilesUnder(store_dir + "/chunks");
      extra = MakeChunk(200 + i, kChunk);
      full = store->Put(extra.id, extra.data.data(), kChunk);
      if (!full.ok()) break;
      auto pin = store->Pin(extra.id);
      REQUIRE(pin.ok());
      pins.push_back(std::move(*pin));
    }
    INFO(full.ToString());
    REQUIRE(full.IsNoSpace());
    CHECK_THAT(full.message(), Catch::StartsWith("disk full"));
    CHECK_THAT(full.message(), Catch::Contains("nothing in the cache can be evicted"));
    CHECK_THAT(full.message(), Catch::Contains("0 other writes in flight"));
    CHECK_THAT(full.message(), Catch::Contains("free space"));
    CHECK(FilesUnder(store_dir + "/tmp").empty());
    CHECK((FilesUnder(store_dir + "/chunks") == files_before));
    CHECK(store->Stats().reserved_bytes == 0);
    CHECK_FALSE(store->Contains(extra.id));

    // The store says it is refusing, and that no eviction could help.
    StoreSpace space = store->Space();
    CHECK(space.refusing);
    CHECK_FALSE(space.room);
    CHECK(space.refused_bytes == kChunk);
    CHECK(space.evictable_bytes == 0);
    CHECK(space.disk_free_bytes < kChunk);
    CHECK(space.why == full.message());
    CHECK(store->Stats().no_space_refusals >= 1);

    // Unpinned, the chunks could be evicted: there is room, though writes
    // have not begun again yet.
    pins.clear();
    space = store->Space();
    CHECK(space.refusing);
    CHECK(space.room);
    CHECK(space.evictable_bytes > 0);

    // The other program frees its space: the same put now works.
    REQUIRE(::unlink(filler.c_str()) == 0);
    REQUIRE(store->Put(extra.id, extra.data.data(), kChunk).ok());
    CHECK_FALSE(store->Space().refusing);
    CHECK((*ReadAll(*store, extra.id) == extra.data));
    CHECK(store->Stats().index_errors == 0);
  }
  // And the store reopens consistent on that filesystem.
  StoreOptions options = TestOptions(store_dir, 1ull << 30);
  options.verify_on_open = true;
  auto store = OpenOrDie(options);
  CHECK(store->Stats().corrupt_dropped == 0);
  CHECK(store->Stats().chunks == FilesUnder(store_dir + "/chunks").size());
}
