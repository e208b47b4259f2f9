// Revocations: a token dies by its id, or with every token of its subject
// issued up to a cutoff; later tokens of the subject live on. Agents apply
// the tracker's list as deltas, so applying one twice must change nothing.
#include "shoal/token_revocations.h"

#include <catch2/catch.hpp>

using namespace shoal;

namespace {

constexpr int64_t kNow = 1795975200000;  // 2026-11-29T18:00:00Z

TokenClaims Token(std::string id, std::string subject, int64_t issued_at_ms) {
  TokenClaims c;
  c.id = std::move(id);
  c.subject = std::move(subject);
  c.namespaces = {"team-a"};
  c.issued_at_ms = issued_at_ms;
  c.expires_at_ms = issued_at_ms + 3600000;
  return c;
}

Revocation ById(uint64_t seq, std::string id) {
  Revocation r;
  r.seq = seq;
  r.kind = Revocation::Kind::kTokenId;
  r.value = std::move(id);
  r.at_ms = kNow;
  r.by = "alice";
  return r;
}

Revocation BySubject(uint64_t seq, std::string subject, int64_t cutoff_ms) {
  Revocation r = ById(seq, std::move(subject));
  r.kind = Revocation::Kind::kSubject;
  r.cutoff_ms = cutoff_ms;
  return r;
}

}  // namespace

TEST_CASE("a token revoked by id is refused, and its subject's other tokens are not",
          "[token][revocation]") {
  RevocationList list;
  list.Add({ById(1, "aaaa")});
  Status s = list.Check(Token("aaaa", "ci", kNow));
  CHECK(s.code() == Status::Code::kUnauthenticated);
  CHECK(s.message().find("token aaaa for 'ci' was revoked at 2026-11-29T18:00:00.000Z") == 0);
  CHECK(list.Check(Token("bbbb", "ci", kNow)).ok());
}

TEST_CASE("revoking a subject kills its tokens issued up to the cutoff, not later ones",
          "[token][revocation]") {
  RevocationList list;
  list.Add({BySubject(1, "ci", kNow)});
  CHECK(list.Find(Token("old", "ci", kNow - 1000)).has_value());
  CHECK(list.Find(Token("same-ms", "ci", kNow)).has_value());
  CHECK(!list.Find(Token("later", "ci", kNow + 1)).has_value());
  CHECK(!list.Find(Token("other", "pod-7", kNow - 1000)).has_value());
  // A later revocation of the subject moves the cutoff on; an earlier one
  // arriving afterwards does not move it back.
  list.Add({BySubject(2, "ci", kNow + 5000), BySubject(3, "ci", kNow - 5000)});
  CHECK(list.Find(Token("later", "ci", kNow + 1))->seq == 2);
}

TEST_CASE("deltas apply once, in order, and a reset replaces the list", "[token][revocation]") {
  RevocationList tracker;
  tracker.Add({ById(1, "a1"), BySubject(2, "ci", kNow), ById(3, "a3")});
  CHECK(tracker.generation() == 3);
  REQUIRE(tracker.Since(1).size() == 2);
  CHECK(tracker.Since(1)[0].seq == 2);
  CHECK(tracker.Since(3).empty());

  RevocationList agent;
  agent.Add(tracker.Since(agent.generation()));
  agent.Add(tracker.Since(0));  // the same delta again: nothing changes
  CHECK(agent.generation() == 3);
  CHECK(agent.Since(0).size() == 3);

  agent.Reset({ById(1, "z9")});
  CHECK(agent.generation() == 1);
  CHECK(!agent.Find(Token("a1", "x", kNow)).has_value());
  CHECK(agent.Find(Token("z9", "x", kNow)).has_value());
}

TEST_CASE("a revocation names a well-formed id or subject", "[token][revocation]") {
  CHECK(ById(1, "3fa2c0de").Validate().ok());
  CHECK(BySubject(1, "pod-7@ns", kNow).Validate().ok());
  CHECK(ById(1, "").Validate().code() == Status::Code::kInvalidArgument);
  CHECK(ById(1, "has space").Validate().code() == Status::Code::kInvalidArgument);
  CHECK(ById(1, std::string(129, 'a')).Validate().code() == Status::Code::kInvalidArgument);
}
