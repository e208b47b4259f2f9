// Asynchronous handlers and body sources: answers and body pieces that come
// later, from other threads, without holding the server's threads while
// they wait.
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "server/http_test_client.h"
#include "shoal/server/http_server.h"

using namespace shoal;
using shoal::testing::Fetch;
using shoal::testing::RawResponse;
using shoal::testing::TestConnection;

namespace {

// Runs queued work on one thread of its own, after a delay: the "elsewhere"
// that answers come from.
class Later {
 public:
  Later() : thread_([this] { Loop(); }) {}
  ~Later() {
    {
      std::lock_guard<std::mutex> l(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void Run(std::chrono::milliseconds delay, std::function<void()> fn) {
    std::lock_guard<std::mutex> l(mu_);
    work_.push_back({std::chrono::steady_clock::now() + delay, std::move(fn)});
    cv_.notify_all();
  }
  // Waits until every job has run and its captures are gone: a responder
  // held here must be called or destroyed before the server stops.
  void Drain() {
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait(l, [this] { return work_.empty() && !busy_; });
  }

 private:
  void Loop() {
    std::unique_lock<std::mutex> l(mu_);
    while (!stop_ || !work_.empty()) {
      if (work_.empty()) {
        cv_.wait(l);
        continue;
      }
      auto it = std::min_element(work_.begin(), work_.end(),
                                 [](const Item& a, const Item& b) { return a.at < b.at; });
      if (it->at > std::chrono::steady_clock::now() && !stop_) {
        cv_.wait_until(l, it->at);
        continue;
      }
      {
        auto fn = std::move(it->fn);
        work_.erase(it);
        busy_ = true;
        l.unlock();
        fn();
      }  // its captures go here, before Drain may return
      l.lock();
      busy_ = false;
      cv_.notify_all();
    }
  }
  struct Item {
    std::chrono::steady_clock::time_point at;
    std::function<void()> fn;
  };
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Item> work_;
  bool stop_ = false;
  bool busy_ = false;  // a job (or its captures) is still alive
  std::thread thread_;
};

// Pieces "a", "bb", "ccc", ... each `delay` after the request for it; the
// third comes from a file region.
class SlowSource final : public HttpBodySource {
 public:
  SlowSource(Later& later, std::chrono::milliseconds delay, int fd)
      : later_(later), delay_(delay), fd_(fd) {}
  void Next(Ready ready) override {
    int i = next_++;
    later_.Run(delay_, [i, ready = std::move(ready), fd = fd_] {
      HttpBodyPiece p;
      if (i == 2) {
        p.file = std::make_shared<HttpFileBody>(::dup(fd), 0, 3);
      } else {
        p.bytes = std::string(size_t(i + 1), char('a' + i));
      }
      ready(std::move(p));
    });
  }
  static std::string Expected(int n) {
    std::string out;
    for (int i = 0; i < n; ++i) out += std::string(size_t(i + 1), char('a' + i));
    return out;
  }

 private:
  Later& later_;
  std::chrono::milliseconds delay_;
  int fd_;
  int next_ = 0;
};

struct SourceServer {
  explicit SourceServer(int threads)
      : server([threads] {
          HttpServerOptions o;
          o.threads = threads;
          return o;
        }()) {
    char path[] = "/tmp/shoal-http-source-XXXXXX";
    fd = ::mkstemp(path);
    REQUIRE(::write(fd, "ccc", 3) == 3);
    ::unlink(path);
    server.HandleAsync("GET", "/later", [this](const HttpRequest& r, HttpResponder respond) {
      std::string who = r.query.count("who") ? r.query.at("who") : "";
      later.Run(std::chrono::milliseconds(50),
                [who, respond] { respond(HttpResponse::Text(200, "hi " + who)); });
    });
    server.HandleAsync("GET", "/slow", [this](const HttpRequest& r, HttpResponder respond) {
      int ms = std::stoi(r.query.at("ms"));
      HttpResponse res;
      res.source = std::make_shared<SlowSource>(later, std::chrono::milliseconds(ms), fd);
      res.stream_length = int64_t(SlowSource::Expected(4).size());
      respond(std::move(res));
    });
    server.Handle("GET", "/fails", [](const HttpRequest&) {
      struct Failing final : HttpBodySource {
        void Next(Ready ready) override { ready(Status::IOError("chunk went away")); }
      };
      HttpResponse res;
      res.source = std::make_shared<Failing>();
      res.stream_length = 10;
      return res;
    });
    REQUIRE(server.Start().ok());
  }
  ~SourceServer() {
    later.Drain();
    server.Stop();
    ::close(fd);
  }
  Later later;  // outlives nothing the server holds: the server stops first
  int fd = -1;
  HttpServer server;
};

std::string Request(const std::string& target) {
  return "GET " + target + " HTTP/1.1\r\nHost: t\r\n\r\n";
}

}  // namespace

TEST_CASE("an asynchronous handler answers later from another thread", "[http]") {
  SourceServer s(1);
  TestConnection c(s.server.port());
  REQUIRE(c.Send(Request("/later?who=pod")));
  RawResponse r = c.Read();
  CHECK(r.status == 200);
  CHECK(r.body == "hi pod");
  // Keep-alive works after an asynchronous answer.
  REQUIRE(c.Send(Request("/later?who=again")));
  CHECK(c.Read().body == "hi again");
}

TEST_CASE("a body source sends bytes and file regions as they become ready", "[http]") {
  SourceServer s(1);
  RawResponse r = Fetch(s.server.port(), "GET", "/slow?ms=5");
  CHECK(r.status == 200);
  CHECK(r.headers["content-length"] == std::to_string(SlowSource::Expected(4).size()));
  CHECK(r.complete);
  CHECK(r.body == SlowSource::Expected(4));
  RawResponse head = Fetch(s.server.port(), "HEAD", "/slow?ms=5");
  CHECK(head.headers["content-length"] == std::to_string(SlowSource::Expected(4).size()));
}

TEST_CASE("a slow source does not hold up other clients of a one-thread server", "[http]") {
  SourceServer s(1);
  // Four slow readers, each waiting 4 x 400 ms for its pieces.
  std::vector<std::unique_ptr<TestConnection>> slow;
  for (int i = 0; i < 4; ++i) {
    slow.push_back(std::make_unique<TestConnection>(s.server.port()));
    REQUIRE(slow.back()->Send(Request("/slow?ms=400")));
  }
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 20; ++i)
    CHECK(Fetch(s.server.port(), "GET", "/slow?ms=1").body == SlowSource::Expected(4));
  auto took = std::chrono::steady_clock::now() - start;
  CHECK(took < std::chrono::milliseconds(1000));
  for (auto& c : slow) CHECK(c->Read().body == SlowSource::Expected(4));
}

TEST_CASE("a failing source cuts its connection, not the server", "[http]") {
  SourceServer s(1);
  RawResponse r = Fetch(s.server.port(), "GET", "/fails");
  CHECK(r.status == 200);
  CHECK(!r.complete);
  CHECK(Fetch(s.server.port(), "GET", "/later?who=x").body == "hi x");
}

TEST_CASE("a client that stops reading a file body is cut off after the idle timeout", "[http]") {
  char path[] = "/tmp/shoal-http-stall-XXXXXX";
  int fd = ::mkstemp(path);
  REQUIRE(fd >= 0);
  ::unlink(path);
  REQUIRE(::ftruncate(fd, 64 << 20) == 0);  // more than any socket buffers hold
  HttpServerOptions o;
  // Long enough that a loaded machine's reader of the second fetch does not
  // pause past it.
  o.idle_timeout = std::chrono::milliseconds(1000);
  HttpServer server(o);
  server.Handle("GET", "/big", [fd](const HttpRequest&) {
    HttpResponse r;
    r.file = std::make_shared<HttpFileBody>(::dup(fd), 0, 64 << 20);
    return r;
  });
  REQUIRE(server.Start().ok());
  TestConnection stalled(server.port());
  REQUIRE(stalled.Send(Request("/big")));
  std::this_thread::sleep_for(std::chrono::milliseconds(3000));
  RawResponse r = stalled.Read();
  CHECK(r.status == 200);
  CHECK(!r.complete);
  CHECK(r.body.size() < size_t(64 << 20));
  // Meanwhile and afterwards, others are served.
  RawResponse other = Fetch(server.port(), "GET", "/big");
  CHECK(other.complete);
  CHECK(other.body.size() == size_t(64 << 20));
  ::close(fd);
}
