#include "daemon/tracker_rank.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

using namespace shoal;

TEST_CASE("agents spread their home trackers evenly, and a ranking is stable", "[fleet]") {
  const std::vector<std::string> fleet = {"t1:7400", "t2:7400", "t3:7400"};
  std::vector<int> homes(3, 0);
  for (int i = 0; i < 3000; ++i) {
    std::vector<size_t> r = RankTrackers("node-" + std::to_string(i), fleet);
    REQUIRE(r.size() == 3);
    CHECK(r[0] != r[1]);
    CHECK(r[1] != r[2]);
    CHECK(r[0] != r[2]);
    homes[r[0]]++;
  }
  for (int n : homes) CHECK((n > 850 && n < 1150));
  CHECK(RankTrackers("node-7", fleet) == RankTrackers("node-7", fleet));
  CHECK(RankTrackers("node-7", {"only:7400"}) == std::vector<size_t>{0});
  CHECK(RankTrackers("node-7", {}).empty());
}

TEST_CASE("removing a tracker moves only the agents whose home it was", "[fleet]") {
  const std::vector<std::string> three = {"t1:7400", "t2:7400", "t3:7400"};
  const std::vector<std::string> two = {"t1:7400", "t2:7400"};
  for (int i = 0; i < 500; ++i) {
    const std::string node = "node-" + std::to_string(i);
    const size_t home = RankTrackers(node, three)[0];
    if (home != 2) CHECK(RankTrackers(node, two)[0] == home);
  }
}
