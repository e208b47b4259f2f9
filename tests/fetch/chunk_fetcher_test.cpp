// ChunkFetcher over a real file-system origin and a real chunk store. The
// origin is wrapped in a gate that holds every GET until the test opens it,
// so "at once" is certain rather than likely, and that counts the GETs the
// origin really served.
#include "fetch/chunk_fetcher.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>

#include "core/forwarding_origin.h"
#include "core/store_test_support.h"
#include "shoal/origin.h"

using namespace shoal;
using namespace shoal::testing;

namespace {

// A real origin whose GETs wait for Open().
class GatedOrigin : public ForwardingOrigin {
 public:
  using ForwardingOrigin::ForwardingOrigin;
  Status Get(const std::string& key, uint64_t offset, uint64_t length, ByteSink& sink) override {
    {
      std::unique_lock<std::mutex> l(mu_);
      ++waiting_;
      cv_.notify_all();
      cv_.wait(l, [this] { return open_; });
      --waiting_;
      ++gets_;
      keys_.push_back(key);
    }
    return ForwardingOrigin::Get(key, offset, length, sink);
  }
  std::string Describe() const override { return "gated " + ForwardingOrigin::Describe(); }

  void Open() {
    std::lock_guard<std::mutex> l(mu_);
    open_ = true;
    cv_.notify_all();
  }
  // Waits until `n` GETs are held at the gate.
  bool AwaitWaiting(int n) {
    std::unique_lock<std::mutex> l(mu_);
    return cv_.wait_for(l, std::chrono::seconds(10), [&] { return waiting_ >= n; });
  }
  int gets() {
    std::lock_guard<std::mutex> l(mu_);
    return gets_;
  }
  // The keys of the GETs let through, in the order they passed the gate.
  std::vector<std::string> keys() {
    std::lock_guard<std::mutex> l(mu_);
    return keys_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
  int waiting_ = 0;
  int gets_ = 0;
  std::vector<std::string> keys_;
};

struct Fixture {
  TempDir dir;
  std::unique_ptr<ChunkStore> store =
      OpenOrDie(TestOptions(dir.path() + "/store", uint64_t{1} << 30));
  GatedOrigin* origin = nullptr;
  std::unique_ptr<Origin> owned;

  Fixture() {
    OriginOptions o;
    o.url = "file://" + dir.path() + "/origin";
    auto inner = OpenOrigin(o);
    REQUIRE(inner.ok());
    auto gated = std::make_unique<GatedOrigin>(std::move(inner).value());
    origin = gated.get();
    owned = std::move(gated);
  }

  ChunkFetch Upload(uint64_t seed, size_t size) {
    TestChunk c = MakeChunk(seed, size);
    REQUIRE(owned->Put(ChunkKey(c.id), c.data.data(), c.data.size()).ok());
    ChunkFetch f;
    f.id = c.id;
    f.size = c.data.size();
    return f;
  }
};

// Collects a lane's callbacks.
struct Heard {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<ChunkFetched> got;
  ChunkFetcher::Done Callback() {
    return [this](const ChunkFetched& f) {
      std::lock_guard<std::mutex> l(mu);
      got.push_back(f);
      cv.notify_all();
    };
  }
  bool Await(size_t n) {
    std::unique_lock<std::mutex> l(mu);
    return cv.wait_for(l, std::chrono::seconds(10), [&] { return got.size() >= n; });
  }
};

}  // namespace

TEST_CASE("a pull's lane and a read asking for the same cold chunk at once read it once",
          "[fetch]") {
  Fixture fx;
  ChunkFetcher fetcher(fx.owned.get(), *fx.store);
  ChunkFetch chunk = fx.Upload(1, 300000);
  auto pull = fetcher.NewLane(4);
  Heard heard;
  pull->Fetch(chunk, heard.Callback());
  REQUIRE(fx.origin->AwaitWaiting(1));  // the pull's GET has started
  // A reader on its own thread wants the same chunk meanwhile.
  auto read = std::async(std::launch::async, [&] { return fetcher.FetchNow(chunk); });
  REQUIRE(read.wait_for(std::chrono::milliseconds(200)) == std::future_status::timeout);
  fx.origin->Open();
  ChunkFetched r = read.get();
  REQUIRE(heard.Await(1));
  CHECK(r.status.ok());
  CHECK(r.joined);
  CHECK(r.bytes == 0);
  CHECK(heard.got[0].status.ok());
  CHECK_FALSE(heard.got[0].joined);
  CHECK(heard.got[0].bytes == chunk.size);  // the bytes are counted once, by the pull
  CHECK(fx.origin->gets() == 1);
  CHECK(fetcher.fetches() == 1);
  CHECK(fetcher.joins() == 1);
  CHECK(fx.store->Contains(chunk.id));
}

TEST_CASE("a queued fetch runs on whichever asker gets to it first", "[fetch]") {
  Fixture fx;
  ChunkFetcher fetcher(fx.owned.get(), *fx.store);
  ChunkFetch busy = fx.Upload(2, 100000);
  ChunkFetch wanted = fx.Upload(3, 100000);
  // A pull lane of one: its only worker is held at the gate by `busy`,
  // so `wanted` waits in its queue.
  auto pull = fetcher.NewLane(1);
  Heard heard;
  pull->Fetch(busy, heard.Callback());
  REQUIRE(fx.origin->AwaitWaiting(1));
  pull->Fetch(wanted, heard.Callback());
  // A read of `wanted` runs it on the read's thread, not behind `busy`.
  auto read = std::async(std::launch::async, [&] { return fetcher.FetchNow(wanted); });
  REQUIRE(fx.origin->AwaitWaiting(2));
  fx.origin->Open();
  ChunkFetched r = read.get();
  CHECK(r.status.ok());
  CHECK(r.joined);  // the pull asked first: the bytes are the pull's
  REQUIRE(heard.Await(2));
  uint64_t pulled = 0;
  for (const ChunkFetched& f : heard.got) {
    CHECK(f.status.ok());
    pulled += f.bytes;
  }
  CHECK(pulled == busy.size + wanted.size);
  CHECK(fx.origin->gets() == 2);  // one GET per chunk
}

TEST_CASE("an owner may join another's fetch; errors reach every asker", "[fetch]") {
  Fixture fx;
  ChunkFetcher fetcher(fx.owned.get(), *fx.store);
  ChunkFetch chunk = fx.Upload(4, 50000);
  auto lane = fetcher.NewLane(2);
  Heard heard;
  lane->Fetch(chunk, heard.Callback());
  REQUIRE(fx.origin->AwaitWaiting(1));
  ChunkFetch as_owner = chunk;
  as_owner.owned = true;
  auto order = std::async(std::launch::async, [&] { return fetcher.FetchNow(as_owner); });
  REQUIRE(order.wait_for(std::chrono::milliseconds(100)) == std::future_status::timeout);
  fx.origin->Open();
  ChunkFetched ordered = order.get();
  CHECK(ordered.status.ok());
  CHECK(ordered.joined);
  REQUIRE(heard.Await(1));
  CHECK(fx.origin->gets() == 1);

  // A chunk the origin lacks: every asker hears the same error.
  ChunkFetch missing = chunk;
  missing.id = MakeChunk(99, 1000).id;
  missing.size = 1000;
  lane->Fetch(missing, heard.Callback());
  ChunkFetched direct = fetcher.FetchNow(missing);
  REQUIRE(heard.Await(2));
  CHECK(direct.status.IsNotFound());
  CHECK(heard.got[1].status.IsNotFound());

  ChunkFetcher none(nullptr, *fx.store);
  ChunkFetched r = none.FetchNow(chunk);
  CHECK(r.status.IsUnavailable());
  CHECK_THAT(r.status.ToString(), Catch::Contains("no --origin"));
}

TEST_CASE("a lane torn down mid-fetch hears nothing after, and leaves others their fetch",
          "[fetch]") {
  Fixture fx;
  ChunkFetcher fetcher(fx.owned.get(), *fx.store);
  ChunkFetch running = fx.Upload(5, 80000);
  ChunkFetch queued = fx.Upload(6, 80000);
  auto other = fetcher.NewLane(1);
  Heard other_heard;
  auto gone_heard = std::make_shared<Heard>();
  {
    auto gone = fetcher.NewLane(1);
    // `gone`'s worker holds `running` at the gate; `queued` waits behind it.
    gone->Fetch(running, gone_heard->Callback());
    REQUIRE(fx.origin->AwaitWaiting(1));
    gone->Fetch(queued, gone_heard->Callback());
    // Another lane asks for `running` too, and will hear of it.
    other->Fetch(running, other_heard.Callback());
    // Tearing `gone` down waits for its worker's fetch: open the gate from
    // another thread once it is waiting.
    std::thread opener([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      fx.origin->Open();
    });
    gone.reset();
    opener.join();
  }
  const size_t heard_by_gone = gone_heard->got.size();
  REQUIRE(other_heard.Await(1));
  CHECK(other_heard.got[0].status.ok());
  // After its teardown the gone lane hears nothing more, and its queued
  // fetch, which nobody else wanted, is not run.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  CHECK(gone_heard->got.size() == heard_by_gone);
  CHECK_FALSE(fx.store->Contains(queued.id));
  // A later asker fetches it afresh.
  CHECK(fetcher.FetchNow(queued).bytes == queued.size);
}

TEST_CASE("a pull's lane and a read's lane asking for the same cold chunk read it once",
          "[fetch]") {
  Fixture fx;
  ChunkFetcher fetcher(fx.owned.get(), *fx.store);
  ChunkFetch chunk = fx.Upload(7, 200000);
  auto pull = fetcher.NewLane(4);
  auto read = fetcher.NewLane(4);
  Heard pulled, read_heard;
  pull->Fetch(chunk, pulled.Callback());
  read->Fetch(chunk, read_heard.Callback(), FetchPriority::kWaited);
  REQUIRE(fx.origin->AwaitWaiting(1));
  CHECK(pull->Waiting(chunk.id));
  CHECK(read->Waiting(chunk.id));
  fx.origin->Open();
  REQUIRE(pulled.Await(1));
  REQUIRE(read_heard.Await(1));
  CHECK(pulled.got[0].status.ok());
  CHECK(read_heard.got[0].status.ok());
  CHECK(pulled.got[0].bytes + read_heard.got[0].bytes == chunk.size);  // counted once
  CHECK(fx.origin->gets() == 1);
  CHECK_FALSE(pull->Waiting(chunk.id));
  CHECK_FALSE(read->Waiting(chunk.id));
}

TEST_CASE(
    "a lane takes what a reader waits on before what is fetched ahead; asked twice is one ask",
    "[fetch]") {
  Fixture fx;
  ChunkFetcher fetcher(fx.owned.get(), *fx.store);
  ChunkFetch busy = fx.Upload(10, 1000);
  ChunkFetch ahead1 = fx.Upload(11, 1000);
  ChunkFetch ahead2 = fx.Upload(12, 1000);
  ChunkFetch waited = fx.Upload(13, 1000);
  auto lane = fetcher.NewLane(1);
  Heard heard;
  lane->Fetch(busy, heard.Callback());
  REQUIRE(fx.origin->AwaitWaiting(1));  // the lane's one worker is held
  lane->Fetch(ahead1, heard.Callback());
  lane->Fetch(ahead2, heard.Callback());
  lane->Fetch(waited, heard.Callback(), FetchPriority::kWaited);
  // A reader now waits on ahead2: it moves up, behind `waited`.
  lane->Fetch(ahead2, heard.Callback(), FetchPriority::kWaited);
  lane->Fetch(ahead1, heard.Callback());  // asked again: still one ask
  fx.origin->Open();
  REQUIRE(heard.Await(4));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  CHECK(heard.got.size() == 4);
  const std::vector<std::string> want = {ChunkKey(busy.id), ChunkKey(waited.id),
                                         ChunkKey(ahead2.id), ChunkKey(ahead1.id)};
  CHECK(fx.origin->keys() == want);
}

TEST_CASE("a lane tries a way elsewhere first, and reads the origin only if it is unavailable",
          "[fetch]") {
  Fixture fx;
  fx.origin->Open();
  ChunkFetcher fetcher(fx.owned.get(), *fx.store);
  auto lane = fetcher.NewLane(2);
  Heard heard;

  // Delivered elsewhere (an owner, say): stored here, and no GET.
  TestChunk delivered = MakeChunk(20, 4000);
  ChunkFetch by_owner;
  by_owner.id = delivered.id;
  by_owner.size = delivered.data.size();
  by_owner.elsewhere = [&] {
    return fx.store->Put(delivered.id, delivered.data.data(), delivered.data.size());
  };
  lane->Fetch(by_owner, heard.Callback());
  REQUIRE(heard.Await(1));
  CHECK(heard.got[0].status.ok());
  CHECK(heard.got[0].joined);
  CHECK(heard.got[0].bytes == 0);
  CHECK(fx.origin->gets() == 0);

  // Unavailable there: read here, once, and counted.
  ChunkFetch direct = fx.Upload(21, 5000);
  direct.elsewhere = [] { return Status::Unavailable("the tracker is unreachable"); };
  lane->Fetch(direct, heard.Callback());
  REQUIRE(heard.Await(2));
  CHECK(heard.got[1].status.ok());
  CHECK(heard.got[1].bytes == direct.size);
  CHECK(fx.origin->gets() == 1);

  // Any other answer ends the ask: no GET.
  ChunkFetch refused = fx.Upload(22, 5000);
  refused.elsewhere = [] { return Status::PermissionDenied("token revoked"); };
  lane->Fetch(refused, heard.Callback());
  REQUIRE(heard.Await(3));
  CHECK(heard.got[2].status.code() == Status::Code::kPermissionDenied);
  CHECK(fx.origin->gets() == 1);
  CHECK_FALSE(fx.store->Contains(refused.id));
}

TEST_CASE("every asker of a torrent reads one clock of how long its pieces went unoffered",
          "[fetch]") {
  UnofferedPieces unoffered;
  uint8_t bytes[32] = {1};
  const FileTorrentId a = FileTorrentId::FromBytes(bytes);
  bytes[0] = 2;
  const FileTorrentId b = FileTorrentId::FromBytes(bytes);
  const auto t0 = UnofferedPieces::Clock::now();
  const auto t1 = t0 + std::chrono::seconds(1);
  // A pull sees pieces 1 and 2 unoffered; a read a second later sees 2 and 3.
  CHECK(unoffered.Since(a, {1, 2}, t0) == std::vector<UnofferedPieces::Clock::time_point>{t0, t0});
  CHECK(unoffered.Since(a, {2, 3}, t1) == std::vector<UnofferedPieces::Clock::time_point>{t0, t1});
  // Piece 1 was offered meanwhile: unoffered again, it waits afresh.
  CHECK(unoffered.Since(a, {1}, t1) == std::vector<UnofferedPieces::Clock::time_point>{t1});
  CHECK(unoffered.Since(b, {1}, t1) == std::vector<UnofferedPieces::Clock::time_point>{t1});
  CHECK(unoffered.torrents() == 2);
  // A torrent nobody asks about for a while is forgotten.
  (void)unoffered.Since(b, {1}, t1 + std::chrono::minutes(2));
  CHECK(unoffered.torrents() == 1);
}
