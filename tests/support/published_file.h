// Publishes a one-file model through a test cluster's tracker, for tests
// that speak to the tracker's swarms directly (/announce, announceBatch).
#ifndef SHOAL_TESTS_SUPPORT_PUBLISHED_FILE_H_
#define SHOAL_TESTS_SUPPORT_PUBLISHED_FILE_H_

#include <catch2/catch.hpp>
#include <string>

#include "support/announced_hash.h"
#include "support/test_cluster.h"

namespace shoal::testing {

// A published one-file model: its version ("ns/model:hex") and the 20-byte
// info-hash its torrent is announced under (the first 20 bytes of its v2
// info-hash).
struct PublishedFile {
  std::string ref;
  std::string info_hash;
};

// Publishes ns/model, one 50,000-byte file of random bytes from `seed` at a
// 16 KiB piece, without seeding it. The test fails unless it worked.
inline PublishedFile PublishOneFile(const TestCluster& c, const std::string& ns, unsigned seed,
                                    const std::string& model) {
  std::string dir = c.tmp / ("ckpt-" + std::to_string(seed));
  WriteRandomFile(dir + "/w.bin", 50000, seed);
  auto pub = RunProcess({CliBinary(), "publish", dir, "--name", ns + "/" + model, "--piece-size",
                         "16384", "--no-seed"},
                        {"SHOAL_TRACKER=" + c.tracker.rpc_address(),
                         "SHOAL_TOKEN=" + c.tracker.MintToken(ns, "write", "trainer"),
                         "SHOAL_ORIGIN=file://" + (c.tmp / "origin")});
  INFO(pub.out << pub.err);
  REQUIRE(pub.exit_code == 0);
  size_t colon = pub.out.find(':');  // "published ns/model:<64 hex>"
  return PublishedFile{ns + "/" + model + pub.out.substr(colon, 65),
                       AnnouncedHash(dir + "/w.bin", 16384, c.tracker.peer_ca())};
}

}  // namespace shoal::testing

#endif  // SHOAL_TESTS_SUPPORT_PUBLISHED_FILE_H_
