// PullStaging, the CLI's side of a pull: what the agent may make it write,
// and what it refuses.
#include "cli/pull_staging.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "support/subprocess.h"

using shoal::PullStaging;
using shoal::Status;
using shoal::testing::TempDir;
namespace fs = std::filesystem;

namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

const uint8_t* Bytes(const std::string& s) { return reinterpret_cast<const uint8_t*>(s.data()); }

}  // namespace

TEST_CASE("small files written whole land byte for byte, and only at their declared size",
          "[cli][staging]") {
  TempDir tmp;
  const std::string dest = tmp / "model";
  auto staging = PullStaging::Create(dest, "team-a/m", /*replace=*/false);
  REQUIRE(staging.ok());
  PullStaging& s = **staging;
  REQUIRE(s.Prepare({"conf"}, {{"conf/a.json", 0644, 5}, {"b.txt", 0644, 3}}).ok());

  REQUIRE(s.WriteWhole(0, Bytes("hello"), 5).ok());
  REQUIRE(s.WriteWhole(1, Bytes("abc"), 3).ok());

  // Too short, too long, or a file that is not in the list: one clear error.
  Status shorter = s.WriteWhole(0, Bytes("hell"), 4);
  CHECK(shorter.code() == Status::Code::kInvalidArgument);
  CHECK_THAT(shorter.message(), Catch::Contains("4 bytes for conf/a.json of 5"));
  CHECK(s.WriteWhole(1, Bytes("abcd"), 4).code() == Status::Code::kInvalidArgument);
  Status missing = s.WriteWhole(2, Bytes("x"), 1);
  CHECK(missing.code() == Status::Code::kInvalidArgument);
  CHECK_THAT(missing.message(), Catch::Contains("file 2 of 2"));

  // A refused write changed nothing.
  REQUIRE(s.Commit().ok());
  CHECK(Slurp(dest + "/conf/a.json") == "hello");
  CHECK(Slurp(dest + "/b.txt") == "abc");
}

TEST_CASE("a staging folder refuses paths that leave it", "[cli][staging]") {
  TempDir tmp;
  auto staging = PullStaging::Create(tmp / "model", "team-a/m", /*replace=*/false);
  REQUIRE(staging.ok());
  Status s = (*staging)->Prepare({}, {{"../escape", 0644, 1}});
  CHECK(s.code() == Status::Code::kInvalidArgument);
  CHECK(!fs::exists(tmp / "escape"));
}
