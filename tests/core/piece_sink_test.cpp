// HashOptions::on_piece: the hasher hands each piece's bytes to the caller,
// so a publish reads its folder once.
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <random>

#include "shoal/piece_hasher.h"

namespace fs = std::filesystem;
using namespace shoal;

namespace {

std::string WriteFile(const fs::path& dir, const std::string& name, size_t size, unsigned seed) {
  std::mt19937 rng(seed);
  std::string bytes(size, '\0');
  for (char& c : bytes) c = static_cast<char>(rng());
  std::ofstream(dir / name, std::ios::binary) << bytes;
  return bytes;
}

struct Seen {
  std::string path;
  uint64_t offset;
  ChunkId id;
  std::vector<uint8_t> bytes;
};

}  // namespace

TEST_CASE("on_piece sees every piece once, with its bytes and its chunk id", "[hash][sink]") {
  fs::path dir = fs::temp_directory_path() / ("shoal-sink-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const uint32_t piece = 64 << 10;
  // Empty, under a block, one whole piece, and several pieces with a tail.
  const std::vector<std::pair<std::string, size_t>> files = {
      {"empty", 0}, {"tiny", 1000}, {"one", piece}, {"many", 3 * piece + 4321}};
  std::map<std::string, std::string> content;
  std::vector<std::string> paths;
  unsigned seed = 1;
  for (const auto& [name, size] : files) {
    paths.push_back((dir / name).string());
    content[paths.back()] = WriteFile(dir, name, size, seed++);
  }

  const bool keep = GENERATE(false, true);  // the sink takes the buffers, or only looks
  HashOptions opts;
  opts.piece_size = piece;
  opts.threads = 2;
  opts.read_size = 16 << 10;  // several reads per piece
  std::mutex mu;
  std::vector<Seen> seen;
  opts.on_piece = [&](HashedPiece& p) {
    std::vector<uint8_t> bytes;
    if (keep) {
      bytes.swap(*p.bytes);
    } else {
      bytes = *p.bytes;
    }
    std::lock_guard<std::mutex> lock(mu);
    seen.push_back({*p.path, p.offset, p.id, std::move(bytes)});
  };
  auto with_sink = HashFiles(paths, opts);
  REQUIRE(with_sink.ok());
  opts.on_piece = nullptr;
  auto without = HashFiles(paths, opts);
  REQUIRE(without.ok());

  size_t expected = 0;
  for (size_t i = 0; i < paths.size(); ++i) {
    CHECK((*with_sink)[i].pieces_root == (*without)[i].pieces_root);
    std::vector<ChunkId> ids = FileChunkIds((*with_sink)[i]);
    expected += ids.size();
    for (size_t k = 0; k < ids.size(); ++k) {
      auto it = std::find_if(seen.begin(), seen.end(), [&](const Seen& s) {
        return s.path == paths[i] && s.offset == k * piece;
      });
      REQUIRE(it != seen.end());
      CHECK(it->id == ids[k]);
      const std::string& file = content[paths[i]];
      const size_t len = std::min<size_t>(piece, file.size() - k * piece);
      REQUIRE(it->bytes.size() == len);
      CHECK(std::string(it->bytes.begin(), it->bytes.end()) == file.substr(k * piece, len));
    }
  }
  CHECK(seen.size() == expected);
  fs::remove_all(dir);
}
