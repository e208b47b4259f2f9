// AgentControls across threads: an agent's control capability lives on the
// loop of the connection it came on, and orders given on another loop (the
// fetch scheduler's) are carried to it and answered back.
#include "scheduler/agent_controls.h"

#include <kj/async-io.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <thread>

#include "proto/kj_status.h"

using namespace shoal;
using namespace shoal::tracker;

namespace {

// Answers each fetch with one chunk of 7 bytes, noting the thread it ran on.
class ThreadNotingControl final : public proto::AgentControl::Server {
 public:
  explicit ThreadNotingControl(std::atomic<std::thread::id>& ran_on) : ran_on_(ran_on) {}

 protected:
  kj::Promise<void> fetch(FetchContext c) override {
    ran_on_ = std::this_thread::get_id();
    c.getResults().setFetched(1);
    c.getResults().setBytes(7);
    return kj::READY_NOW;
  }

 private:
  std::atomic<std::thread::id>& ran_on_;
};

// A connection's loop on a thread of its own: attaches one agent's control,
// serves until told to detach, then detaches it there.
struct ConnectionLoop {
  ConnectionLoop(AgentControls& controls, uint64_t session)
      : thread([this, &controls, session] {
          auto io = kj::setupAsyncIo();
          auto paf = kj::newPromiseAndCrossThreadFulfiller<void>();
          controls.Attach("agent-a", session, kj::heap<ThreadNotingControl>(ran_on));
          id = std::this_thread::get_id();
          detach = kj::mv(paf.fulfiller);
          ready = true;
          paf.promise.wait(io.waitScope);
          controls.Detach("agent-a", session);
        }) {
    while (!ready) std::this_thread::yield();
  }
  ~ConnectionLoop() {
    if (thread.joinable()) Close();
  }
  void Close() {
    detach->fulfill();
    thread.join();
  }

  std::atomic<std::thread::id> ran_on{};
  std::atomic<bool> ready{false};
  std::thread::id id;
  kj::Own<kj::CrossThreadPromiseFulfiller<void>> detach;
  std::thread thread;  // last: started once the rest is set
};

const FetchTarget kTarget{"team-a", "m", VersionId{}};

}  // namespace

TEST_CASE("an order given on one loop is sent from the loop the agent's control came on",
          "[controls]") {
  auto io = kj::setupAsyncIo();
  AgentControls controls;
  ConnectionLoop conn(controls, 1);
  REQUIRE(controls.Connected("agent-a"));
  CHECK(controls.connected() == 1);

  FetchOutcome got = controls.Fetch("agent-a", kTarget, ChunkId{}, false).wait(io.waitScope);
  CHECK(got.fetched == 1);
  CHECK(got.bytes == 7);
  CHECK(conn.ran_on.load() == conn.id);
  CHECK(conn.ran_on.load() != std::this_thread::get_id());

  // Once the connection's loop detaches the control, orders fail clearly
  // instead of reaching a capability that is gone.
  conn.Close();
  CHECK_FALSE(controls.Connected("agent-a"));
  CHECK(controls.connected() == 0);
  auto failed = controls.Fetch("agent-a", kTarget, ChunkId{}, false)
                    .then([](FetchOutcome) { return std::string("answered"); },
                          [](kj::Exception&& e) { return std::string(e.getDescription().cStr()); });
  CHECK(failed.wait(io.waitScope).find("control connection closed") != std::string::npos);
}

TEST_CASE(
    "a newer registration on another loop replaces the control, and the older one's detach "
    "leaves it",
    "[controls]") {
  auto io = kj::setupAsyncIo();
  AgentControls controls;
  ConnectionLoop first(controls, 1);
  ConnectionLoop second(controls, 2);
  FetchOutcome got = controls.Fetch("agent-a", kTarget, ChunkId{}, false).wait(io.waitScope);
  CHECK(got.bytes == 7);
  CHECK(second.ran_on.load() == second.id);
  CHECK(first.ran_on.load() == std::thread::id{});

  // The first connection closing drops its own capability on its own loop,
  // not the second's.
  first.Close();
  REQUIRE(controls.Connected("agent-a"));
  got = controls.Fetch("agent-a", kTarget, ChunkId{}, false).wait(io.waitScope);
  CHECK(got.fetched == 1);
  second.Close();
  CHECK_FALSE(controls.Connected("agent-a"));
}
