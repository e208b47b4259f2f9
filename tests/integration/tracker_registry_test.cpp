// The tracker's registry and auth, end to end: a real shoal-tracker process,
// the real shoal CLI, and a folder origin.
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <thread>

#include "support/announced_hash.h"
#include "support/test_cluster.h"

using namespace shoal::testing;
namespace fs = std::filesystem;

namespace {

// A tracker alone on a folder origin, collecting garbage without grace.
struct Cluster : TestCluster {
  Cluster() : TestCluster(Options()) {}
  static ClusterOptions Options() {
    ClusterOptions options;
    options.tracker_flags = {"--gc-grace", "0s"};
    return options;
  }
  std::string MakeCheckpoint(const std::string& name, int files, size_t size, unsigned seed) {
    std::string dir = tmp / name;
    for (int i = 0; i < files; ++i) {
      WriteRandomFile(dir + "/shard-" + std::to_string(i) + ".safetensors", size,
                      seed + static_cast<unsigned>(i));
    }
    return dir;
  }
  size_t OriginChunks() {
    if (!fs::exists(origin + "/chunks")) return 0;
    return static_cast<size_t>(std::distance(fs::directory_iterator(origin + "/chunks"), {}));
  }
};

std::string VersionOf(const ProcessResult& publish) {
  // "published ns/model:<64 hex>"
  size_t colon = publish.out.find(':');
  return publish.out.substr(colon + 1, 64);
}

}  // namespace

TEST_CASE("a published version reads back signed, and tags move with history", "[tracker]") {
  Cluster c;
  std::string writer = c.tracker.MintToken("team-a", "write", "trainer");
  std::string ckpt = c.MakeCheckpoint("ckpt", 3, 100000, 1);
  auto v1 = c.Shoal(writer, {"publish", ckpt, "--name", "team-a/llama", "--tag", "latest", "--tag",
                             "prod", "--label", "epoch=1", "--piece-size", "16384"});
  INFO(v1.err);
  REQUIRE(v1.exit_code == 0);
  CHECK_THAT(v1.out, Catch::Contains("uploaded 21 chunks"));  // 3 files x ceil(100000/16384)

  auto shown = c.Shoal(writer, {"inspect", "team-a/llama:prod", "--json"});
  REQUIRE(shown.exit_code == 0);
  CHECK_THAT(shown.out, Catch::Contains(VersionOf(v1)));
  CHECK_THAT(shown.out, Catch::Contains("\"createdBy\": \"trainer\""));
  CHECK_THAT(shown.out, Catch::Contains("\"key\": \"epoch\""));

  WriteRandomFile(ckpt + "/shard-1.safetensors", 100000, 99);
  auto v2 = c.Shoal(writer, {"publish", ckpt, "--name", "team-a/llama", "--tag", "latest",
                             "--piece-size", "16384"});
  REQUIRE(v2.exit_code == 0);
  CHECK_THAT(v2.out, Catch::Contains("uploaded 7 chunks"));  // only the changed file
  auto inspected = c.Shoal(writer, {"inspect", "team-a/llama:latest"});
  CHECK_THAT(inspected.out, Catch::Contains("parent " + VersionOf(v1).substr(0, 12)));

  auto history = c.Shoal(writer, {"tag", "team-a/llama", "latest", "--history"});
  REQUIRE(history.exit_code == 0);
  CHECK_THAT(history.out, Catch::Contains("(none) -> " + VersionOf(v1).substr(0, 12)));
  CHECK_THAT(history.out,
             Catch::Contains(VersionOf(v1).substr(0, 12) + " -> " + VersionOf(v2).substr(0, 12)));

  auto moved = c.Shoal(writer, {"tag", "team-a/llama:" + VersionOf(v2).substr(0, 10), "prod"});
  REQUIRE(moved.exit_code == 0);
  auto ls = c.Shoal(writer, {"ls", "team-a"});
  CHECK_THAT(ls.out, Catch::Contains("2 versions"));
  CHECK_THAT(ls.out, Catch::Contains("prod=" + VersionOf(v2).substr(0, 12)));
}

TEST_CASE("a killed tracker restarts with everything it committed", "[tracker]") {
  Cluster c;
  std::string writer = c.tracker.MintToken("team-a", "write", "trainer");
  std::string ckpt = c.MakeCheckpoint("ckpt", 2, 50000, 7);
  auto v1 = c.Shoal(writer, {"publish", ckpt, "--name", "team-a/m", "--tag", "prod"});
  REQUIRE(v1.exit_code == 0);
  c.tracker.Kill();
  auto down = c.Shoal(writer, {"ls", "team-a"});
  CHECK(down.exit_code == 1);
  CHECK_THAT(down.err, Catch::StartsWith("shoal: error: "));
  CHECK(std::count(down.err.begin(), down.err.end(), '\n') == 1);

  c.tracker.Start();
  auto back = c.Shoal(writer, {"inspect", "team-a/m:prod"});
  INFO(back.err);
  REQUIRE(back.exit_code == 0);
  CHECK_THAT(back.out, Catch::Contains(VersionOf(v1)));
  auto again = c.Shoal(writer, {"publish", ckpt, "--name", "team-a/m"});
  REQUIRE(again.exit_code == 0);
  CHECK_THAT(again.out, Catch::Contains("uploaded 0 chunks"));
  CHECK_THAT(again.out, Catch::Contains("origin: 0 PUT requests, 0 bytes sent"));
}

TEST_CASE("tokens allow exactly their role and namespaces", "[tracker][auth]") {
  Cluster c;
  std::string admin = c.tracker.MintToken("*", "admin", "root");
  std::string writer = c.tracker.MintToken("team-a", "write", "ci");
  std::string reader = c.tracker.MintToken("team-a", "read", "pod-7");
  std::string other = c.tracker.MintToken("team-b", "admin", "team-b-admin");
  std::string ckpt = c.MakeCheckpoint("ckpt", 1, 40000, 3);
  auto v = c.Shoal(writer, {"publish", ckpt, "--name", "team-a/m", "--tag", "prod"});
  REQUIRE(v.exit_code == 0);
  std::string ref = "team-a/m:" + VersionOf(v);

  struct Case {
    std::string who, token;
    std::vector<std::string> args;
    bool allowed;
    std::string error;
  };
  std::vector<Case> cases = {
      {"reader", reader, {"inspect", "team-a/m:prod"}, true, ""},
      {"reader", reader, {"ls", "team-a"}, true, ""},
      {"reader", reader, {"publish", ckpt, "--name", "team-a/m"}, false, "has role read"},
      {"reader", reader, {"tag", ref, "x"}, false, "has role read"},
      {"reader", reader, {"rm", ref}, false, "has role read"},
      {"reader", reader, {"inspect", "team-b/m:prod"}, false, "team-b"},
      {"writer", writer, {"tag", ref, "staging"}, true, ""},
      {"writer", writer, {"publish", ckpt, "--name", "team-b/m"}, false, "team-b"},
      {"writer", writer, {"rm", ref}, false, "has role write"},
      {"writer", writer, {"gc"}, false, ""},
      {"team-b admin", other, {"inspect", "team-a/m:prod"}, false, "team-a"},
      {"team-b admin", other, {"rm", ref}, false, "team-a"},
      {"team-b admin", other, {"gc", "--dry-run"}, false, ""},
      {"admin", admin, {"ls"}, true, ""},
      {"admin", admin, {"gc", "--dry-run"}, true, ""},
      {"admin", admin, {"rm", ref}, false, "is tagged"},
      {"admin", admin, {"rm", ref, "--force"}, true, ""},
  };
  for (const Case& k : cases) {
    auto r = c.Shoal(k.token, k.args);
    INFO(k.who << " runs " << k.args[0] << " " << (k.args.size() > 1 ? k.args[1] : "") << ": "
               << r.err);
    CHECK((r.exit_code == 0) == k.allowed);
    if (!k.allowed) {
      CHECK_THAT(r.err, Catch::Contains(k.error));
      CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    }
  }
}

TEST_CASE("forged, tampered and expired tokens are refused", "[tracker][auth]") {
  Cluster c;
  std::string good = c.tracker.MintToken("team-a", "admin", "ci");
  std::string shortlived = c.tracker.MintToken("team-a", "admin", "ci", "1s");
  std::string tampered = good;
  tampered[tampered.size() / 2] = tampered[tampered.size() / 2] == 'A' ? 'B' : 'A';
  TempDir other_dir;
  TrackerProcess other(other_dir / "t", {"--origin", "file://" + (other_dir / "o")});
  std::string foreign = other.MintToken("team-a", "admin", "ci");  // another tracker's secret

  for (const std::string& bad : {tampered, foreign, std::string("garbage"), std::string(10000, 'x'),
                                 std::string("shoal1..")}) {
    auto r = c.Shoal(bad, {"ls", "team-a"});
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Catch::Contains("unauthenticated: token"));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));
  auto expired = c.Shoal(shortlived, {"ls", "team-a"});
  CHECK(expired.exit_code == 1);
  CHECK_THAT(expired.err, Catch::Contains("expired"));
  auto missing = RunProcess({CliBinary(), "ls", "team-a", "--tracker", c.tracker.rpc_address()});
  CHECK(missing.exit_code == 1);
  CHECK_THAT(missing.err, Catch::Contains("no token"));
}

TEST_CASE("hostile names and references get one clear error", "[tracker][hostile]") {
  Cluster c;
  std::string admin = c.tracker.MintToken("team-a", "admin", "ci");
  std::string ckpt = c.MakeCheckpoint("ckpt", 1, 1000, 5);
  REQUIRE(c.Shoal(admin, {"publish", ckpt, "--name", "team-a/m", "--tag", "prod"}).exit_code == 0);
  struct Case {
    std::vector<std::string> args;
    std::string error;
  };
  std::vector<Case> cases = {
      {{"publish", ckpt, "--name", "team-a//m"}, "model name"},
      {{"publish", ckpt, "--name", "team-a/m/extra"}, "model name"},
      {{"publish", ckpt, "--name", "team-a/" + std::string(300, 'm')}, "1 to 128 bytes"},
      {{"publish", ckpt, "--name", std::string("team-a/m\x01x", 10)}, "model name"},
      {{"publish", ckpt, "--name", "team-a/m", "--tag", "bad tag"}, "may only hold"},
      {{"publish", ckpt, "--name", "team-a/m", "--tag", "deadbeef00"}, "looks like a version id"},
      {{"inspect", "team-a/m:nosuchtag"}, "no tag 'nosuchtag' in team-a/m"},
      {{"inspect", "team-a/nosuchmodel:prod"}, "no tag 'prod'"},
      {{"tag", "team-a/m:0123456789abcdef", "prod"}, "no tag or version '0123456789abcdef'"},
      {{"tag", "team-a/m:prod", std::string(200, 't')}, "1 to 128 bytes"},
      {{"ls", "team-a/" + std::string(1000, 'x')}, "too long"},
  };
  for (const Case& k : cases) {
    auto r = c.Shoal(admin, k.args);
    INFO(k.args[0] << " " << k.args[1] << ": " << r.err);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Catch::Contains(k.error));
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
}

TEST_CASE("gc sweeps only chunks no version references", "[tracker][gc]") {
  Cluster c;
  std::string admin = c.tracker.MintToken("*", "admin", "root");
  std::string a = c.MakeCheckpoint("a", 2, 30000, 11);
  std::string b = c.MakeCheckpoint("b", 1, 30000, 21);
  auto va = c.Shoal(admin, {"publish", a, "--name", "team-a/a", "--piece-size", "16384"});
  auto vb = c.Shoal(admin, {"publish", b, "--name", "team-a/b", "--piece-size", "16384"});
  REQUIRE(va.exit_code == 0);
  REQUIRE(vb.exit_code == 0);
  CHECK(c.OriginChunks() == 6);
  REQUIRE(c.Shoal(admin, {"rm", "team-a/b:" + VersionOf(vb)}).exit_code == 0);
  auto dry = c.Shoal(admin, {"gc", "--dry-run"});
  CHECK_THAT(dry.out, Catch::Contains("4 chunks referenced, 2 unreferenced"));
  CHECK(c.OriginChunks() == 6);
  auto young = c.Shoal(admin, {"gc", "--grace", "1h"});
  CHECK_THAT(young.out, Catch::Contains("swept 0 chunks"));
  auto gc = c.Shoal(admin, {"gc"});
  CHECK_THAT(gc.out, Catch::Contains("swept 2 chunks"));
  CHECK(c.OriginChunks() == 4);
  auto still = c.Shoal(admin, {"inspect", "team-a/a:" + VersionOf(va)});
  CHECK(still.exit_code == 0);
}

TEST_CASE("the tracker serves health, metrics and a token-checked JSON view over HTTP",
          "[tracker][http]") {
  Cluster c;
  std::string writer = c.tracker.MintToken("team-a", "write", "trainer");
  std::string outsider = c.tracker.MintToken("team-b", "read", "pod-9");
  std::string ckpt = c.MakeCheckpoint("ckpt", 2, 20000, 31);
  auto v = c.Shoal(writer, {"publish", ckpt, "--name", "team-a/llama", "--tag", "prod"});
  REQUIRE(v.exit_code == 0);
  std::string base = "http://127.0.0.1:" + std::to_string(c.tracker.http_port());
  auto curl = [&](const std::string& path, const std::string& token) {
    std::vector<std::string> args = {"/usr/bin/curl", "-s", "-w", "\n%{http_code}"};
    if (!token.empty()) args.push_back("-HAuthorization: Bearer " + token);
    args.push_back(base + path);
    return RunProcess(args).out;
  };
  CHECK(curl("/healthz", "") == "ok\n\n200");
  std::string metrics = curl("/metrics", "");
  CHECK_THAT(metrics, Catch::Contains("shoal_tracker_registry_ops_total{op=\"publish\"} 1"));
  CHECK_THAT(metrics, Catch::Contains("shoal_tracker_chunks_indexed_total 2"));
  std::string manifest = curl("/v1/models/team-a/llama/versions/prod/manifest", writer);
  CHECK_THAT(manifest, Catch::Contains(VersionOf(v)));
  CHECK_THAT(manifest, Catch::EndsWith("200"));
  CHECK_THAT(curl("/v1/models/team-a/llama/versions", writer),
             Catch::Contains("\"tags\":[\"prod\"]"));
  CHECK_THAT(curl("/v1/models/team-a/llama/versions", ""), Catch::EndsWith("401"));
  std::string denied = curl("/v1/models/team-a/llama/versions", outsider);
  CHECK_THAT(denied, Catch::Contains("team-a"));
  CHECK_THAT(denied, Catch::EndsWith("403"));
  CHECK_THAT(curl("/v1/models/team-a/llama/versions/nosuch/manifest", writer),
             Catch::EndsWith("404"));
  CHECK_THAT(curl("/v1/models/team-a/..%2f..%2fetc/versions", writer), Catch::EndsWith("400"));
}

TEST_CASE("announce answers compact peer lists and refuses a missing token",
          "[tracker][announce]") {
  Cluster c;
  // Announces are for files of published versions: publish one, and name
  // its torrent by the first 20 bytes of its v2 info-hash.
  std::string ckpt = c.MakeCheckpoint("ckpt", 1, 50000, 9);
  REQUIRE(c.Shoal(c.tracker.MintToken("team-a", "write", "trainer"),
                  {"publish", ckpt, "--name", "team-a/m", "--piece-size", "16384", "--no-seed"})
              .exit_code == 0);
  std::string encoded_hash =
      PercentEncode(AnnouncedHash(ckpt + "/shard-0.safetensors", 16384, c.tracker.peer_ca()));

  std::string token = c.tracker.MintToken("team-a", "read", "agent-1");
  std::string base = "http://127.0.0.1:" + std::to_string(c.tracker.http_port()) +
                     "/announce?info_hash=" + encoded_hash + "&token=" + token;
  auto announce = [&](const std::string& peer, int port, int left) {
    return RunProcess({"/usr/bin/curl", "-s",
                       base + "&peer_id=" + peer + "&port=" + std::to_string(port) +
                           "&left=" + std::to_string(left) + "&compact=1"})
        .out;
  };
  std::string first = announce("AAAAAAAAAAAAAAAAAAAA", 6881, 0);
  CHECK_THAT(first, Catch::StartsWith("d8:completei1e10:incompletei0e8:intervali"));
  CHECK_THAT(first, Catch::Contains("5:peers0:"));  // nobody else yet
  std::string second = announce("BBBBBBBBBBBBBBBBBBBB", 6882, 100);
  // One IPv4 peer: 127.0.0.1, port 6881 (0x1ae1).
  CHECK_THAT(second, Catch::Contains(std::string("5:peers6:\x7f\x00\x00\x01\x1a\xe1", 15)));
  std::string no_token = RunProcess({"/usr/bin/curl", "-s",
                                     "http://127.0.0.1:" + std::to_string(c.tracker.http_port()) +
                                         "/announce?info_hash=" + encoded_hash +
                                         "&peer_id=CCCCCCCCCCCCCCCCCCCC&port=1"})
                             .out;
  CHECK_THAT(no_token, Catch::StartsWith("d14:failure reason"));
  std::string bad_hash =
      RunProcess(
          {"/usr/bin/curl", "-s",
           "http://127.0.0.1:" + std::to_string(c.tracker.http_port()) +
               "/announce?info_hash=short&peer_id=CCCCCCCCCCCCCCCCCCCC&port=1&token=" + token})
          .out;
  CHECK_THAT(bad_hash, Catch::Contains("info_hash must be 20 bytes"));
  CHECK_THAT(RunProcess({"/usr/bin/curl", "-s",
                         "http://127.0.0.1:" + std::to_string(c.tracker.http_port()) + "/metrics"})
                 .out,
             Catch::Contains("shoal_tracker_swarm_peers 2"));
}

TEST_CASE("a registry lost with its disk is recovered from the manifest copies in the origin",
          "[tracker][recover]") {
  Cluster c;
  std::string ckpt = c.MakeCheckpoint("ckpt", 2, 50000, 31);
  auto v1 = c.Shoal(c.writer, {"publish", ckpt, "--name", "team-a/llama", "--tag", "prod",
                               "--piece-size", "16384", "--no-seed"});
  REQUIRE(v1.exit_code == 0);
  WriteRandomFile(ckpt + "/shard-0.safetensors", 50000, 77);
  auto v2 = c.Shoal(
      c.writer, {"publish", ckpt, "--name", "team-a/llama", "--piece-size", "16384", "--no-seed"});
  REQUIRE(v2.exit_code == 0);
  for (const auto& v : {VersionOf(v1), VersionOf(v2)}) {
    CHECK(fs::exists(c.origin + "/manifests/team-a/llama/" + v));
  }

  c.tracker.Stop();
  fs::remove_all(c.tracker.data_dir() + "/registry");
  const std::vector<std::string> recover = {TrackerBinary(),      "recover",  "--data-dir",
                                            c.tracker.data_dir(), "--origin", c.origin_url};
  std::vector<std::string> dry_run = recover;
  dry_run.push_back("--dry-run");
  auto dry = RunProcess(dry_run);
  INFO(dry.err);
  REQUIRE(dry.exit_code == 0);
  CHECK_THAT(dry.out, Catch::Contains("would recover 2 versions"));
  auto first = RunProcess(recover);
  REQUIRE(first.exit_code == 0);
  CHECK_THAT(first.out, Catch::Contains("recovered team-a/llama:" + VersionOf(v1)));
  CHECK_THAT(first.out, Catch::Contains("recovered 2 versions"));
  auto again = RunProcess(recover);
  CHECK_THAT(again.out, Catch::Contains("recovered 0 versions"));
  CHECK_THAT(again.out, Catch::Contains("2 already in"));

  c.tracker.Start();
  // Both versions resolve by ID and verify; tags lived only in the lost
  // registry and say so.
  for (const auto& v : {VersionOf(v1), VersionOf(v2)}) {
    auto shown = c.Shoal(c.reader, {"inspect", "team-a/llama:" + v.substr(0, 12)});
    INFO(shown.err);
    CHECK(shown.exit_code == 0);
  }
  auto tagged = c.Shoal(c.reader, {"inspect", "team-a/llama:prod"});
  CHECK(tagged.exit_code != 0);
  CHECK_THAT(tagged.err, Catch::Contains("no tag 'prod'"));

  // A damaged copy stops the recovery with one line naming it.
  c.tracker.Stop();
  fs::remove_all(c.tracker.data_dir() + "/registry");
  std::ofstream(c.origin + "/manifests/team-a/llama/" + VersionOf(v2), std::ios::trunc)
      << "not a manifest";
  auto damaged = RunProcess(recover);
  CHECK(damaged.exit_code == 1);
  CHECK_THAT(damaged.err, Catch::Contains("manifests/team-a/llama/" + VersionOf(v2)));
  CHECK(std::count(damaged.err.begin(), damaged.err.end(), '\n') == 1);
  c.tracker.Start();
}

TEST_CASE("keys create makes a fleet's secrets once, and a tracker signs with them",
          "[tracker][keys]") {
  TempDir tmp;
  const std::string dir = tmp / "secrets";
  auto made = RunProcess({TrackerBinary(), "keys", "create", "--secrets-dir", dir});
  INFO(made.err);
  REQUIRE(made.exit_code == 0);
  for (const char* f : {"token.secret", "signing.key", "peer-ca.key", "peer-ca.pem"}) {
    CHECK_THAT(made.out, Catch::Contains(std::string("made ") + dir + "/" + f));
  }
  CHECK((fs::status(dir).permissions() & (fs::perms::group_all | fs::perms::others_all)) ==
        fs::perms::none);
  const std::string key_line = made.out.substr(made.out.find("signing key "));
  auto again = RunProcess({TrackerBinary(), "keys", "create", "--secrets-dir", dir});
  REQUIRE(again.exit_code == 0);
  CHECK_THAT(again.out, Catch::Contains("kept " + dir + "/signing.key"));
  CHECK_THAT(again.out, Catch::Contains(key_line));  // the same key

  fs::create_directories(tmp / "origin");
  TrackerProcess tracker(tmp / "tracker",
                         {"--origin", "file://" + (tmp / "origin"), "--secrets-dir", dir});
  tracker.Start();
  const std::string id = key_line.substr(12, key_line.find('\n') - 12);
  CHECK_THAT(tracker.log(), Catch::Contains("\"signing_key\":\"" + id + "\""));
}
