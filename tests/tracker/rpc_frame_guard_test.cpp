// FrameGuard over a real socket pair: real Cap'n Proto messages pass
// through it whole, however they are split, and oversized or malformed
// headers are refused before the reader allocates.
#include "rpc/rpc_frame_guard.h"

#include <capnp/message.h>
#include <capnp/serialize-async.h>
#include <capnp/serialize.h>
#include <kj/async-io.h>

#include <catch2/catch.hpp>
#include <string>

#include "shoal/proto/tracker.capnp.h"

using namespace shoal::tracker;

namespace {

struct Pipe {
  kj::AsyncIoContext io = kj::setupAsyncIo();
  kj::TwoWayPipe pipe = io.provider->newTwoWayPipe();
  kj::Own<FrameGuard> guard;
  kj::AsyncIoStream& writer = *pipe.ends[1];

  explicit Pipe(uint64_t limit_bytes) {
    guard = kj::heap<FrameGuard>(kj::mv(pipe.ends[0]), io.provider->getTimer(), limit_bytes,
                                 5 * kj::SECONDS);
  }
  void Write(const std::string& bytes) {
    writer.write(bytes.data(), bytes.size()).wait(io.waitScope);
  }
  // Starts reading one message through the guard; Subject() finishes it.
  kj::Promise<kj::Own<capnp::MessageReader>> StartRead() {
    return capnp::readMessage(*guard).eagerlyEvaluate(nullptr);
  }
  // The message's subject, or the error.
  std::string Subject(kj::Promise<kj::Own<capnp::MessageReader>> read) {
    std::string out;
    KJ_IF_MAYBE (e, kj::runCatchingExceptions([&] {
                   auto reader = read.wait(io.waitScope);
                   out = reader->getRoot<shoal::proto::Identity>().getSubject().cStr();
                 })) {
      out = std::string("error: ") + e->getDescription().cStr();
    }
    return out;
  }
  std::string ReadSubject() { return Subject(StartRead()); }
};

// A framed message whose subject is `subject`, spread over many small
// segments (a 1-word first segment forces the builder to add more).
std::string Message(const std::string& subject, size_t extra_namespaces) {
  capnp::MallocMessageBuilder b(1, capnp::AllocationStrategy::FIXED_SIZE);
  auto id = b.initRoot<shoal::proto::Identity>();
  id.setSubject(subject);
  auto ns = id.initNamespaces(static_cast<unsigned>(extra_namespaces));
  for (unsigned i = 0; i < extra_namespaces; ++i) ns.set(i, "namespace-" + std::to_string(i));
  auto words = capnp::messageToFlatArray(b);
  return std::string(reinterpret_cast<const char*>(words.asBytes().begin()),
                     words.asBytes().size());
}

std::string Header(std::initializer_list<uint32_t> words) {
  std::string out;
  for (uint32_t w : words) out.append(reinterpret_cast<const char*>(&w), 4);
  return out;
}

}  // namespace

TEST_CASE("frame guard passes multi-segment messages whole, split at any byte", "[rpc]") {
  Pipe p(64 << 10);
  std::string a = Message("first", 20), b = Message("second", 3);
  REQUIRE(a.size() > 64);
  // The first byte by byte while the reader waits, then the second in one
  // write.
  auto first = p.StartRead();
  for (char ch : a) p.Write(std::string(1, ch));
  CHECK(p.Subject(kj::mv(first)) == "first");
  p.Write(b);
  CHECK(p.ReadSubject() == "second");
}

TEST_CASE("frame guard refuses a header over its limit, and stays refused", "[rpc]") {
  Pipe p(4096);
  auto refused = p.guard->onRefused();
  p.Write(Header({0, (8 << 20) - 2}));
  CHECK_THAT(p.ReadSubject(), Catch::Contains("claims more than 4096 bytes"));
  CHECK(refused.wait(p.io.waitScope) == FrameRefusal::kTooLarge);
  p.Write(Message("late", 0));
  CHECK_THAT(p.ReadSubject(), Catch::Contains("error"));
}

TEST_CASE("frame guard sums every segment against the limit", "[rpc]") {
  Pipe p(4096);
  p.Write(Header({2, 200, 200, 200}));  // three segments, 4800 bytes in all
  CHECK_THAT(p.ReadSubject(), Catch::Contains("claims more than 4096 bytes"));
}

TEST_CASE("frame guard refuses more segments than Cap'n Proto allows", "[rpc]") {
  Pipe p(64 << 20);
  p.Write(Header({100000, 1}));
  CHECK_THAT(p.ReadSubject(), Catch::Contains("100001 segments"));
}

TEST_CASE("frame guard lets a raised limit through", "[rpc]") {
  Pipe p(64);
  p.guard->set_message_limit_bytes(1 << 20);
  p.Write(Message("big", 200));
  CHECK(p.ReadSubject() == "big");
}
