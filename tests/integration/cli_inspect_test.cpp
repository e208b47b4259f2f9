// `shoal inspect` run as a real process on real folders.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "support/subprocess.h"

using shoal::testing::RunProcess;
using shoal::testing::TempDir;
using shoal::testing::WriteRandomFile;

namespace {
const std::string kShoal = SHOAL_CLI_PATH;

size_t Count(const std::string& s, const std::string& needle) {
  size_t n = 0;
  for (size_t p = s.find(needle); p != std::string::npos; p = s.find(needle, p + 1)) ++n;
  return n;
}
}  // namespace

TEST_CASE("inspect summarises a checkpoint folder", "[cli]") {
  TempDir dir;
  WriteRandomFile(dir / "ckpt/model-00001.safetensors", 5 * 65536 + 3, 1);
  WriteRandomFile(dir / "ckpt/config.json", 700, 2);
  WriteRandomFile(dir / "ckpt/tokenizer/empty.txt", 0, 3);
  std::filesystem::create_directories(dir / "ckpt/logs");

  auto r =
      RunProcess({kShoal, "inspect", dir / "ckpt", "--piece-size", "65536", "--name", "team-a/m"});
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("team-a/m"));
  CHECK_THAT(r.out, Catch::Contains("3 files"));
  CHECK_THAT(r.out, Catch::Contains("(328383 bytes)"));
  CHECK_THAT(r.out, Catch::Contains("7 pieces"));  // 6 + 1 + 0
  CHECK_THAT(r.out, Catch::Contains("1 empty folders"));
}

TEST_CASE("inspect --json carries every pieces root in lowercase hex", "[cli]") {
  TempDir dir;
  WriteRandomFile(dir / "ckpt/a.bin", 100000, 4);
  WriteRandomFile(dir / "ckpt/b/c.bin", 20000, 5);
  auto r = RunProcess({kShoal, "inspect", dir / "ckpt", "--json", "--piece-size", "16384"});
  REQUIRE(r.exit_code == 0);
  CHECK(Count(r.out, "\"piecesRoot\": \"") == 2);
  CHECK(Count(r.out, "\"pieceLayer\": \"") == 2);  // both files are over one piece
  CHECK_THAT(r.out, Catch::Contains("\"pieceSize\": 16384"));
  CHECK_THAT(r.out, Catch::Contains("\"path\": \"b/c.bin\""));
  // The same folder hashed twice gives the same pieces roots.
  auto again = RunProcess({kShoal, "inspect", dir / "ckpt", "--json", "--piece-size", "16384"});
  size_t p = r.out.find("\"piecesRoot\"");
  CHECK(again.out.find(r.out.substr(p, 90)) != std::string::npos);
  for (char c : r.out.substr(p + 15, 64)) CHECK(((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')));
}

TEST_CASE("inspect refuses bad input with one line and a non-zero exit", "[cli]") {
  TempDir dir;
  WriteRandomFile(dir / "ckpt/a.bin", 1000, 6);

  SECTION("a missing folder") {
    auto r = RunProcess({kShoal, "inspect", dir / "missing"});
    CHECK(r.exit_code == 1);
    CHECK(r.err == "shoal: error: invalid argument: '" + (dir / "missing") +
                       "' is not a folder; give a checkpoint folder to inspect\n");
  }
  SECTION("a symbolic link, unless --follow-symlinks") {
    std::filesystem::create_symlink("a.bin", dir / "ckpt/link.bin");
    auto r = RunProcess({kShoal, "inspect", dir / "ckpt"});
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Catch::Contains("'link.bin' is a symbolic link; pass --follow-symlinks"));
    CHECK(Count(r.err, "\n") == 1);
    auto followed = RunProcess({kShoal, "inspect", dir / "ckpt", "--follow-symlinks"});
    CHECK(followed.exit_code == 0);
    CHECK_THAT(followed.out, Catch::Contains("2 files"));
  }
  SECTION("a piece size that is not a power of two") {
    auto r = RunProcess({kShoal, "inspect", dir / "ckpt", "--piece-size", "100000"});
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Catch::Contains("must be a power of two from 16 KiB to 64 MiB"));
  }
  SECTION("a FIFO in the folder") {
    REQUIRE(::mkfifo((dir / "ckpt/pipe").c_str(), 0644) == 0);
    auto r = RunProcess({kShoal, "inspect", dir / "ckpt"});
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Catch::Contains("'pipe' is not a regular file or folder"));
  }
  SECTION("an unknown flag") {
    auto r = RunProcess({kShoal, "inspect", dir / "ckpt", "--bogus"});
    CHECK(r.exit_code != 0);
  }
}
