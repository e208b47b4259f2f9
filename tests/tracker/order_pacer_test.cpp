#include "scheduler/order_pacer.h"

#include <catch2/catch.hpp>
#include <vector>

using namespace shoal::tracker;

namespace {

constexpr uint64_t kChunk = 16 << 20;

// Runs `rounds` rounds on one agent: each round starts as many orders as
// the cap allows, together, and ends them together after `ms_of(k)`
// milliseconds, k being how many ran. Returns the cap after each round.
template <typename F>
std::vector<int> Rounds(OrderPacer& p, int rounds, F ms_of, int64_t* now) {
  std::vector<int> caps;
  for (int r = 0; r < rounds; ++r) {
    const int k = p.Cap("a");
    std::vector<OrderPacer::Ticket> tickets;
    for (int i = 0; i < k; ++i) tickets.push_back(p.Start("a", *now));
    *now += ms_of(k);
    for (const auto& t : tickets) p.Done("a", t, *now, true, kChunk);
    caps.push_back(p.Cap("a"));
  }
  return caps;
}

}  // namespace

TEST_CASE("an agent whose link is full goes back to one order and waits before trying again",
          "[fetch][pacer]") {
  OrderPacer p(4);
  int64_t now = 1000;
  CHECK(p.Cap("a") == 1);
  // Each order takes k times as long beside k-1 others: the link is shared.
  auto link_bound = [](int k) { return 1000 * k; };
  std::vector<int> caps = Rounds(p, 2, link_bound, &now);
  CHECK(caps[0] == 2);  // alone: try two
  CHECK(caps[1] == 1);  // two moved no more than one: back to one
  // For OrderPacer::kRetryMs (30 s) from the cut, at 4 s, it stays at one;
  // the order that ends at 34 s tries two again, and two fall back.
  REQUIRE(OrderPacer::kRetryMs == 30000);
  caps = Rounds(p, 31, link_bound, &now);
  CHECK(caps[0] == 1);
  CHECK(caps[28] == 1);  // ended at 33 s
  CHECK(caps[29] == 2);  // ended at 34 s
  CHECK(caps[30] == 1);
}

TEST_CASE("an agent whose orders each take the same time alone or together climbs to the most",
          "[fetch][pacer]") {
  OrderPacer p(4);
  int64_t now = 1000;
  // One GET stream is the limit, not the link: k orders take as long as one.
  std::vector<int> caps = Rounds(
      p, 5, [](int) { return 200; }, &now);
  CHECK(caps[0] == 2);
  CHECK(caps[1] == 3);
  CHECK(caps[2] == 4);
  CHECK(caps[4] == 4);  // never past fetches_per_agent
}

TEST_CASE("small chunks climb to the most, and orders that fetched nothing teach nothing",
          "[fetch][pacer]") {
  OrderPacer p(3);
  int64_t now = 0;
  OrderPacer::Ticket t = p.Start("a", now);
  p.Done("a", t, now + 50, /*fetched=*/false, 0);  // failed, or the chunk was there
  CHECK(p.Cap("a") == 1);
  for (int i = 0; i < 3; ++i) {
    t = p.Start("a", now);
    now += 40;
    p.Done("a", t, now, true, 64 << 10);  // a 64 KiB config file
  }
  CHECK(p.Cap("a") == 3);
  CHECK(p.Cap("b") == 1);  // agents are paced apart
}
