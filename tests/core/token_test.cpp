// Tokens: a minted token verifies and says what its holder may do; anything
// forged, tampered, truncated or out of scope is refused with a clear reason.
#include "shoal/token.h"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <string>

#include "shoal/base64url.h"
#include "shoal/duration.h"

using namespace shoal;

namespace {

constexpr int64_t kNow = 1795975200000;  // 2026-11-29T18:00:00Z
constexpr int64_t kDay = 24 * 3600 * 1000;

TokenAuthority Authority(char fill = 'k') {
  return TokenAuthority::FromSecret(std::string(32, fill)).value();
}

TokenClaims Claims(Role role, std::vector<std::string> namespaces, std::string subject = "ci") {
  TokenClaims c;
  c.id = NewTokenId();
  c.subject = std::move(subject);
  c.role = role;
  c.namespaces = std::move(namespaces);
  c.issued_at_ms = kNow;
  c.expires_at_ms = kNow + 30 * kDay;
  return c;
}

std::string TempDir() {
  char tmpl[] = "/tmp/shoal-token-test-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  return tmpl;
}

}  // namespace

TEST_CASE("a minted token verifies to the same claims", "[token]") {
  TokenAuthority auth = Authority();
  TokenClaims c = Claims(Role::kWrite, {"team-a", "team-b"});
  std::string token = auth.Mint(c);
  CHECK(token.rfind("shoal1.", 0) == 0);
  Result<TokenClaims> back = auth.Verify(token);
  REQUIRE(back.ok());
  CHECK(back->id == c.id);
  CHECK(back->subject == "ci");
  CHECK(back->role == Role::kWrite);
  CHECK(back->namespaces == std::vector<std::string>{"team-a", "team-b"});
  CHECK(back->issued_at_ms == c.issued_at_ms);
  CHECK(back->expires_at_ms == c.expires_at_ms);
}

TEST_CASE("a token signed with another secret is refused", "[token]") {
  std::string token = Authority('x').Mint(Claims(Role::kAdmin, {"*"}));
  Result<TokenClaims> r = Authority('k').Verify(token);
  REQUIRE(r.status().code() == Status::Code::kUnauthenticated);
  CHECK(r.status().message() == "token signature is invalid");
}

TEST_CASE("tampered claims do not verify", "[token]") {
  TokenAuthority auth = Authority();
  std::string token = auth.Mint(Claims(Role::kRead, {"team-a"}));
  size_t dot = token.rfind('.');
  std::string claims = *base64url::Decode(token.substr(7, dot - 7));
  size_t at = claims.find("role=read");
  REQUIRE(at != std::string::npos);
  claims.replace(at, 9, "role=admin");
  std::string forged = "shoal1." + base64url::Encode(claims) + token.substr(dot);
  CHECK(auth.Verify(forged).status().message() == "token signature is invalid");

  // Every single-character change anywhere is refused, never accepted.
  for (size_t i = 0; i < token.size(); ++i) {
    std::string t = token;
    t[i] = t[i] == 'A' ? 'B' : 'A';
    Result<TokenClaims> r = auth.Verify(t);
    INFO("position " << i);
    CHECK(r.status().code() == Status::Code::kUnauthenticated);
  }
}

TEST_CASE("truncated, garbage and huge tokens are malformed or invalid", "[token]") {
  TokenAuthority auth = Authority();
  std::string token = auth.Mint(Claims(Role::kRead, {"team-a"}));
  for (size_t len = 0; len < token.size(); ++len) {
    CHECK(auth.Verify(token.substr(0, len)).status().code() == Status::Code::kUnauthenticated);
  }
  for (const char* junk : {"", "shoal1", "shoal1.", "shoal1..", "shoal1.a.b.c", "Bearer x",
                           "shoal2.YQ.YQ", "shoal1.!!!.???", "shoal1.YQ.", "\xff\xfe\x00"}) {
    Result<TokenClaims> r = auth.Verify(junk);
    CHECK(r.status().code() == Status::Code::kUnauthenticated);
  }
  CHECK(auth.Verify("shoal1.abc").status().message() == "token is malformed");
  std::string huge = "shoal1." + std::string(1 << 20, 'A') + "." + std::string(43, 'A');
  CHECK(auth.Verify(huge).status().message() == "token is malformed");
}

TEST_CASE("an expired token names its subject and the expiry", "[token]") {
  TokenClaims c = Claims(Role::kRead, {"team-a"});
  CHECK(c.Check("team-a", Role::kRead, c.expires_at_ms - 1).ok());
  Status s = c.Check("team-a", Role::kRead, c.expires_at_ms);
  REQUIRE(s.code() == Status::Code::kUnauthenticated);
  CHECK(s.message().rfind("token for 'ci' expired at 2026-12-29T18:00:00.000Z", 0) == 0);
}

TEST_CASE("a token only reaches the namespaces it is scoped to", "[token]") {
  TokenClaims c = Claims(Role::kAdmin, {"team-a"}, "pod-7");
  CHECK(c.Check("team-a", Role::kRead, kNow).ok());
  Status s = c.Check("team-b", Role::kRead, kNow);
  CHECK(s.message() == "token for 'pod-7' may not read namespace 'team-b'; it is scoped to team-a");
  CHECK(c.Check("team-b", Role::kWrite, kNow).message().find("may not write to") !=
        std::string::npos);
  CHECK(!c.Check("", Role::kAdmin, kNow).ok());  // cluster-wide needs '*'
  CHECK(!c.Check("team-a-2", Role::kRead, kNow).ok());

  TokenClaims all = Claims(Role::kAdmin, {"*"});
  CHECK(all.Check("team-b", Role::kAdmin, kNow).ok());
  CHECK(all.Check("", Role::kAdmin, kNow).ok());
}

TEST_CASE("roles are ordered read < write < admin", "[token]") {
  const Role roles[] = {Role::kRead, Role::kWrite, Role::kAdmin};
  for (Role held : roles) {
    for (Role needed : roles) {
      Status s = Claims(held, {"team-a"}).Check("team-a", needed, kNow);
      INFO(RoleName(held) << " doing " << RoleName(needed));
      CHECK(s.ok() == (int(held) >= int(needed)));
    }
  }
  Status s = Claims(Role::kRead, {"team-a"}, "pod-7").Check("team-a", Role::kWrite, kNow);
  CHECK(s.message() == "token for 'pod-7' has role read; publishing or tagging needs role write");
  CHECK(ParseRole("write").value() == Role::kWrite);
  CHECK(!ParseRole("root").ok());
}

TEST_CASE("claims with bad fields are refused before minting", "[token]") {
  TokenClaims c = Claims(Role::kRead, {"team a"});
  CHECK(!c.Validate().ok());
  CHECK_THROWS(Authority().Mint(c));
  c = Claims(Role::kRead, {});
  CHECK(!c.Validate().ok());
  c = Claims(Role::kRead, {"team-a"}, "bad\nsubject");
  CHECK(!c.Validate().ok());
  CHECK(!TokenAuthority::FromSecret("short").ok());
}

TEST_CASE("the secret file is created once with mode 0600", "[token]") {
  std::string dir = TempDir();
  std::string path = dir + "/token.secret";
  Result<TokenAuthority> first = TokenAuthority::LoadOrCreate(path);
  REQUIRE(first.ok());
  struct stat st;
  REQUIRE(stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  CHECK(st.st_size == 32);

  std::string token = first->Mint(Claims(Role::kRead, {"team-a"}));
  Result<TokenAuthority> again = TokenAuthority::LoadOrCreate(path);
  REQUIRE(again.ok());
  CHECK(again->Verify(token).ok());

  // Kubernetes mounts secrets as symlinks; the target's mode is what counts.
  std::string link = dir + "/linked.secret";
  REQUIRE(symlink(path.c_str(), link.c_str()) == 0);
  Result<TokenAuthority> linked = TokenAuthority::LoadOrCreate(link);
  REQUIRE(linked.ok());
  CHECK(linked->Verify(token).ok());
  unlink(link.c_str());

  REQUIRE(chmod(path.c_str(), 0640) == 0);
  Result<TokenAuthority> loose = TokenAuthority::LoadOrCreate(path);
  REQUIRE(loose.status().code() == Status::Code::kPermissionDenied);
  CHECK(loose.status().message().find("readable by group or others (mode 0640)") !=
        std::string::npos);

  std::string short_path = dir + "/short.secret";
  { std::ofstream(short_path) << "too short"; }
  REQUIRE(chmod(short_path.c_str(), 0600) == 0);
  CHECK(TokenAuthority::LoadOrCreate(short_path).status().code() == Status::Code::kInvalidArgument);
  unlink(path.c_str());
  unlink(short_path.c_str());
  rmdir(dir.c_str());
}

TEST_CASE("durations parse with one unit", "[token]") {
  CHECK(ParseDuration("30d").value().count() == 30 * kDay);
  CHECK(ParseDuration("12h").value().count() == 12 * 3600 * 1000);
  CHECK(ParseDuration("15m").value().count() == 15 * 60 * 1000);
  CHECK(ParseDuration("3600s").value().count() == 3600 * 1000);
  for (const char* bad : {"", "d", "30", "0s", "-5m", "5 m", "5w", "1.5h", "99999999999999999d"}) {
    INFO(bad);
    CHECK(!ParseDuration(bad).ok());
  }
}

TEST_CASE("base64url is strict and canonical", "[token]") {
  for (std::string s : {"", "a", "ab", "abc", "abcd", "\xff\xfe\xfd"}) {
    CHECK(base64url::Decode(base64url::Encode(s)) == s);
  }
  CHECK(!base64url::Decode("YR"));  // non-zero unused bits
  CHECK(!base64url::Decode("YQ=="));
  CHECK(!base64url::Decode("Y"));
}

TEST_CASE("a missing right is PermissionDenied, a dead token Unauthenticated", "[token]") {
  TokenClaims c = Claims(Role::kRead, {"team-a"});
  CHECK(c.Check("team-b", Role::kRead, kNow).code() == Status::Code::kPermissionDenied);
  CHECK(c.Check("team-a", Role::kWrite, kNow).code() == Status::Code::kPermissionDenied);
  CHECK(c.Check("team-a", Role::kRead, c.expires_at_ms).code() == Status::Code::kUnauthenticated);
}

TEST_CASE("peeking reads a token's claims without its secret, forged or not", "[token]") {
  TokenClaims c = Claims(Role::kWrite, {"team-a"}, "pod-7");
  std::string token = Authority('x').Mint(c);
  Result<TokenClaims> peeked = PeekTokenClaims(token);
  REQUIRE(peeked.ok());
  CHECK(peeked->id == c.id);
  CHECK(peeked->subject == "pod-7");
  CHECK(peeked->issued_at_ms == kNow);
  // A peek does not check the MAC: that is the point, and why it is never
  // used for trust.
  std::string forged = token.substr(0, token.rfind('.') + 1) + "AAAA";
  CHECK(PeekTokenClaims(forged).ok());
  CHECK(!Authority('x').Verify(forged).ok());
  for (const char* junk : {"", "shoal1.", "shoal1.!!!.x", "Bearer x", "shoal1.YQ.YQ"}) {
    CHECK(PeekTokenClaims(junk).status().code() == Status::Code::kUnauthenticated);
  }
}
