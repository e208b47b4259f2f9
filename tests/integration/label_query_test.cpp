// Finding versions by label, end to end: a training job publishes
// checkpoints labelled by run and epoch; `shoal ls --label … --latest`
// names the newest of a run, `shoal pull --label … --latest` pulls it
// through an agent, and the tracker's JSON view takes the same filter.
#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "support/test_cluster.h"

using namespace shoal::testing;

namespace {

ClusterOptions OneAgent() {
  ClusterOptions o;
  o.agents = 1;
  o.agents_use_origin = true;
  return o;
}

// Publishes a one-file checkpoint labelled run=R and epoch=E, unseeded;
// returns its folder.
std::string PublishCheckpoint(TestCluster& c, int run, int epoch) {
  const std::string dir = c.tmp / ("run" + std::to_string(run) + "-epoch" + std::to_string(epoch));
  WriteRandomFile(dir + "/model.safetensors", (1 << 20) + 1000 * epoch + run,
                  static_cast<unsigned>(100 * run + epoch));
  ProcessResult r = c.Shoal(c.writer, {"publish", dir, "--name", "team-a/m", "--tag", "latest",
                                       "--label", "run=" + std::to_string(run), "--label",
                                       "epoch=" + std::to_string(epoch), "--no-seed"});
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  return dir;
}

// The version IDs in `shoal ls` output, in order.
std::vector<std::string> Listed(const std::string& out) {
  std::vector<std::string> ids;
  size_t at = 0;
  while ((at = out.find('\n', at)) != std::string::npos) {
    ++at;
    if (out.size() >= at + 64 && out.compare(at, 7, "VERSION") != 0 &&
        out.find_first_not_of("0123456789abcdef", at) >= at + 64)
      ids.push_back(out.substr(at, 64));
  }
  return ids;
}

}  // namespace

TEST_CASE("the newest checkpoint of a run is found and pulled by its labels", "[cli][labels]") {
  TestCluster c(OneAgent());
  PublishCheckpoint(c, 1, 1);
  PublishCheckpoint(c, 2, 1);
  const std::string newest_of_run1 = PublishCheckpoint(c, 1, 2);
  PublishCheckpoint(c, 2, 2);  // the newest of all, and `latest`

  ProcessResult run1 = c.Shoal(c.reader, {"ls", "team-a/m", "--label", "run=1"});
  INFO(run1.out << run1.err);
  REQUIRE(run1.exit_code == 0);
  std::vector<std::string> ids = Listed(run1.out);
  REQUIRE(ids.size() == 2);
  ProcessResult one = c.Shoal(c.reader, {"ls", "team-a/m", "--label", "run=1", "--latest"});
  REQUIRE(one.exit_code == 0);
  REQUIRE(Listed(one.out) == std::vector<std::string>{ids[0]});
  ProcessResult both =
      c.Shoal(c.reader, {"ls", "team-a/m", "--label", "epoch=2", "--label", "run=1"});
  CHECK(Listed(both.out) == std::vector<std::string>{ids[0]});
  // For scripts: one JSON array, as the tracker's view prints it.
  ProcessResult json_ls =
      c.Shoal(c.reader, {"ls", "team-a/m", "--label", "run=1", "--latest", "--json"});
  REQUIRE(json_ls.exit_code == 0);
  CHECK(json_ls.out.front() == '[');
  CHECK_THAT(json_ls.out, Catch::Contains("\"versionId\":\"" + ids[0] + "\""));
  CHECK_THAT(json_ls.out, Catch::Contains("\"labels\":[\"epoch=2\",\"run=1\"]"));

  // The pull takes the newest of run 1, not `latest`.
  ProcessResult pull = c.Shoal(c.reader, {"pull", "team-a/m", "--label", "run=1", "--latest",
                                          "--to", c.tmp / "out", "--agent", c.agents[0]->socket()});
  INFO(pull.out << pull.err);
  REQUIRE(pull.exit_code == 0);
  CHECK(SameTree(newest_of_run1, c.tmp / "out"));
  CHECK_THAT(pull.out, Catch::Contains(ids[0].substr(0, 12)));

  // The tracker's JSON view, with the same filter.
  const std::string admin = c.tracker.MintToken("*", "read", "ops");
  const std::string base = "http://127.0.0.1:" + std::to_string(c.tracker.http_port());
  CurlAnswer json = c.Curl({"-H", "Authorization: Bearer " + admin,
                            base + "/v1/models/team-a/m/versions?label=run%3D1,epoch%3D2"});
  REQUIRE(json.status == 200);
  CHECK_THAT(json.body, Catch::Contains(ids[0]));
  CHECK_THAT(json.body, Catch::Contains("epoch=2"));
  size_t entries = 0;
  for (size_t at = 0; (at = json.body.find("\"versionId\"", at)) != std::string::npos; ++at)
    ++entries;
  CHECK(entries == 1);
  CurlAnswer bad = c.Curl(
      {"-H", "Authorization: Bearer " + admin, base + "/v1/models/team-a/m/versions?label=run"});
  CHECK(bad.status == 400);
}

TEST_CASE("a label filter that matches nothing, or is malformed, ends with one line",
          "[cli][labels]") {
  TestCluster c(OneAgent());
  PublishCheckpoint(c, 1, 1);
  ProcessResult none = c.Shoal(c.reader, {"ls", "team-a/m", "--label", "run=9"});
  CHECK(none.exit_code == 0);
  CHECK_THAT(none.out, Catch::Contains("no version of team-a/m carries the label(s) run=9"));
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"ls", "team-a/m", "--label", "run=9", "--latest"},
           {"ls", "team-a/m", "--label", "run"},
           {"ls", "team-a", "--label", "run=1"},
           {"pull", "team-a/m", "--label", "run=1", "--agent", c.agents[0]->socket()},
           {"pull", "team-a/m:latest", "--label", "run=1", "--latest", "--agent",
            c.agents[0]->socket()},
           {"pull", "team-a/m", "--label", "run=9", "--latest", "--to", c.tmp / "none", "--agent",
            c.agents[0]->socket()}}) {
    ProcessResult r = c.Shoal(c.reader, args);
    INFO(args[0] << " " << args[1] << " " << args[3] << ": " << r.out << r.err);
    CHECK(r.exit_code != 0);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
  ProcessResult missing =
      c.Shoal(c.reader, {"pull", "team-a/m", "--label", "run=9", "--latest", "--to",
                         c.tmp / "none2", "--agent", c.agents[0]->socket()});
  CHECK_THAT(missing.err, Catch::Contains("no version of team-a/m carries the label(s) run=9"));
}
