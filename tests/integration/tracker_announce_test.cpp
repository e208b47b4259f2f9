// The tracker's /announce endpoint probed the way a hostile or careless
// client would, with curl against a real shoal-tracker.
#include <catch2/catch.hpp>

#include <filesystem>
#include <map>

#include "support/subprocess.h"
#include "support/tracker_process.h"

using namespace shoal::testing;
namespace fs = std::filesystem;

namespace {

std::string PercentEncode(const std::string& bytes) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char ch : bytes) {
    out += '%';
    out += kHex[ch >> 4];
    out += kHex[ch & 15];
  }
  return out;
}

// GET /announce with these parameters (values sent percent-encoded);
// returns the bencoded body.
std::string Announce(const TrackerProcess& tracker, const std::map<std::string, std::string>& params) {
  std::string url = "http://127.0.0.1:" + std::to_string(tracker.http_port()) + "/announce?";
  for (const auto& [k, v] : params) url += k + "=" + PercentEncode(v) + "&";
  return RunProcess({"/usr/bin/curl", "-s", "--max-time", "5", url}).out;
}

struct AnnounceCluster {
  TempDir tmp;
  TrackerProcess tracker{tmp / "tracker", {"--origin", "file://" + (tmp / "origin")}};
  AnnounceCluster() {
    fs::create_directories(tmp / "origin");
    tracker.Start();
  }
};

}  // namespace

TEST_CASE("an announce with a negative port that strtoul would wrap is refused", "[tracker][announce]") {
  AnnounceCluster c;
  std::string token = c.tracker.MintToken("*", "read", "agent");
  std::map<std::string, std::string> probe = {{"token", token},
                                              {"info_hash", std::string(20, '\x11')},
                                              {"peer_id", std::string(20, 'p')},
                                              {"port", "-18446744073709550617"},
                                              {"left", "0"}};
  std::string reply = Announce(c.tracker, probe);
  CHECK_THAT(reply, Catch::Contains("failure reason") && Catch::Contains("port: must be a whole number"));
  CHECK(c.tracker.Metric("shoal_tracker_swarm_peers") == 0);

  for (const auto& [key, bad] : std::map<std::string, std::string>{
           {"port", "+6881"}, {"numwant", "-1"}, {"left", "0x10"}, {"uploaded", "1 "}, {"downloaded", "1e3"}}) {
    auto params = probe;
    params["port"] = "6881";
    params[key] = bad;
    INFO(key << "=" << bad);
    CHECK_THAT(Announce(c.tracker, params), Catch::Contains("failure reason") && Catch::Contains(key + ": "));
  }
  CHECK(c.tracker.Metric("shoal_tracker_swarm_peers") == 0);
}

TEST_CASE("the audit log refuses an 'after' that is not a plain number", "[tracker]") {
  AnnounceCluster c;
  std::string admin = c.tracker.MintToken("*", "admin", "ops");
  std::string base = "http://127.0.0.1:" + std::to_string(c.tracker.http_port()) + "/v1/audit?after=";
  auto get = [&](const std::string& after) {
    return RunProcess({"/usr/bin/curl", "-s", "--max-time", "5", "-o", "/dev/null", "-w", "%{http_code}", "-H",
                       "Authorization: Bearer " + admin, base + after})
        .out;
  };
  CHECK(get("0") == "200");
  CHECK(get("-1") == "400");
  CHECK(get("5x") == "400");
}
