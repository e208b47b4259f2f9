// A BitTorrent announce as the tracker's GET /announce answers it
// (tracker/swarm/announce_handler.h): the request target is split and decoded by
// ParseTarget, binary info_hash and peer_id included, and HandleAnnounce
// checks the token, the 20-byte IDs, the numbers (announce_numbers.h) and
// the torrent, then records the peer in a small swarm and bencodes the
// reply.
//
// Seeds are libtorrent's own announces, whose token and torrent this
// tracker does not know. The first byte's bits let the fuzzer past those
// checks: bit 0 puts a valid token in place of the query's, bit 1 the
// info_hash of the one published file, and bit 2 makes the peer's address
// IPv6.
#include <stdlib.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "auth/token_verifier.h"
#include "common/tracker_metrics.h"
#include "fuzz/fuzz_check.h"
#include "registry/registry_store.h"
#include "server/http_wire.h"
#include "shoal/file_torrent_info.h"
#include "shoal/token.h"
#include "shoal/utc_time.h"
#include "swarm/announce_handler.h"
#include "swarm/swarm_store.h"
#include "swarm/torrent_index.h"

namespace {

using shoal::fuzz::Check;
namespace tracker = shoal::tracker;

// One published version of one file larger than a piece: one torrent.
shoal::Manifest Published() {
  shoal::Manifest m;
  m.ns = "team";
  m.name = "model";
  m.created_by = "fuzz";
  m.piece_size = 16 << 10;
  shoal::FileEntry f;
  f.path = "weights.bin";
  f.size = 40 << 10;
  uint8_t root[32];
  std::memset(root, 0x5a, sizeof(root));
  f.pieces_root = shoal::PiecesRoot::FromBytes(root);
  m.files.push_back(f);
  return m;
}

struct Tracker {
  shoal::TokenAuthority authority =
      shoal::TokenAuthority::FromSecret(shoal::fuzz::kTokenSecret).value();
  // Revocations live in a registry: an empty one, in a temporary folder
  // removed when libFuzzer exits normally.
  std::string dir;
  std::unique_ptr<tracker::RegistryStore> store;
  std::unique_ptr<tracker::TokenVerifier> tokens;
  std::string token;
  std::string info_hash;
  tracker::TorrentIndex torrents{""};
  tracker::TrackerMetrics metrics;

  Tracker() {
    char tmpl[] = "/tmp/shoal-fuzz-announce-XXXXXX";
    Check(mkdtemp(tmpl) != nullptr, "cannot make a temporary folder");
    dir = tmpl;
    auto opened = tracker::RegistryStore::Open(dir + "/registry");
    Check(opened.ok(), "cannot open the registry");
    store = std::move(opened).value();
    tokens = std::make_unique<tracker::TokenVerifier>(authority, *store);
    Check(tokens->Load().ok(), "cannot load the revocations");
    shoal::TokenClaims c;
    c.id = "fuzz";
    c.subject = "agent-1";
    c.role = shoal::Role::kRead;
    c.namespaces = {"team"};
    c.issued_at_ms = shoal::NowMs();
    c.expires_at_ms = c.issued_at_ms + 24 * 3600 * 1000;
    token = authority.Mint(c);
    shoal::Manifest m = Published();
    torrents.Add(shoal::VersionId(), m);  // the one version; its ID does not matter here
    shoal::Digest h = shoal::VersionTorrentHashes(m, "").at(0);
    info_hash.assign(reinterpret_cast<const char*>(h.data()), 20);
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Tracker* t = new Tracker;
  static const bool cleanup = std::atexit([] {
                                std::error_code ec;
                                std::filesystem::remove_all(t->dir, ec);
                              }) == 0;
  (void)cleanup;
  if (size == 0) return 0;
  const uint8_t mode = data[0];
  std::string_view target(reinterpret_cast<const char*>(data + 1), size - 1);
  shoal::HttpRequest req;
  if (!shoal::ParseTarget(target, &req)) return 0;
  req.method = "GET";
  req.target = std::string(target);
  req.remote_address = mode & 4 ? "[2001:db8::7]:40000" : "10.0.0.7:40000";
  if (mode & 1) req.query["token"] = t->token;
  if (mode & 2) req.query["info_hash"] = t->info_hash;

  // A fresh swarm with two peers in it and room for little more, so the
  // limits are reached too.
  tracker::SwarmStore swarm(60000, 60000, tracker::SwarmLimits{2, 4});
  const int64_t now = shoal::NowMs();
  for (int i = 0; i < 2; ++i) {
    tracker::AnnounceRequest other;
    std::memcpy(other.info_hash.data(), t->info_hash.data(), 20);
    other.peer_id = std::string(19, 'p') + char('0' + i);
    other.self = tracker::PeerEndpoint{
        *tracker::PeerAddress::Parse(i == 0 ? "10.0.0.8" : "2001:db8::8"), 6881, i == 0, "z"};
    Check(swarm.Announce(other, now).ok(), "the swarm refuses its first peers");
  }
  tracker::AnnounceDeps deps{.tokens = *t->tokens,
                             .torrents = t->torrents,
                             .swarm = swarm,
                             .metrics = t->metrics,
                             .announce_interval_ms = 30000,
                             .seed_announce_interval_ms = 300000};
  shoal::HttpResponse r = tracker::HandleAnnounce(deps, req);
  Check(r.status == 200, "an announce not answered 200");
  Check(r.body.size() >= 2 && r.body.front() == 'd' && r.body.back() == 'e',
        "an announce reply that is not a bencoded dictionary");
  return 0;
}
