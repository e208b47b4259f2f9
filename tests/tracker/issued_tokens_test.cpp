// The issued-tokens journal: what `token create` appends reads back whole,
// a line torn by a crash is skipped, and no line holds a MAC.
#include "registry/issued_tokens.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

using namespace shoal;
using namespace shoal::tracker;

namespace {

std::string TempDir() {
  char tmpl[] = "/tmp/shoal-issued-test-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  return tmpl;
}

TokenClaims Claims(std::string subject, std::vector<std::string> namespaces) {
  TokenClaims c;
  c.id = NewTokenId();
  c.subject = std::move(subject);
  c.role = Role::kWrite;
  c.namespaces = std::move(namespaces);
  c.issued_at_ms = 1795975200000;
  c.expires_at_ms = c.issued_at_ms + 3600000;
  return c;
}

}  // namespace

TEST_CASE("issued tokens read back in order, and a missing journal is empty", "[tracker][token]") {
  const std::string path = IssuedTokensPath(TempDir());
  REQUIRE(ReadIssuedTokens(path).ok());
  CHECK(ReadIssuedTokens(path)->empty());

  TokenClaims a = Claims("ci", {"team-a", "team-b"}), b = Claims("pod-7@x", {"*"});
  REQUIRE(AppendIssuedToken(path, a).ok());
  REQUIRE(AppendIssuedToken(path, b).ok());
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);

  Result<std::vector<TokenClaims>> back = ReadIssuedTokens(path);
  REQUIRE(back.ok());
  REQUIRE(back->size() == 2);
  CHECK((*back)[0].id == a.id);
  CHECK((*back)[0].namespaces == a.namespaces);
  CHECK((*back)[0].role == Role::kWrite);
  CHECK((*back)[1].subject == "pod-7@x");
  CHECK((*back)[1].expires_at_ms == b.expires_at_ms);

  // A MAC is never written: the journal holds claims, which grant nothing.
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  CHECK(text.str().find("shoal1.") == std::string::npos);
}

TEST_CASE("a journal line torn by a crash is skipped, cut anywhere", "[tracker][token]") {
  const std::string dir = TempDir();
  const std::string whole = IssuedTokensPath(dir);
  TokenClaims a = Claims("ci", {"team-a"}), b = Claims("ci", {"team-a"});
  REQUIRE(AppendIssuedToken(whole, a).ok());
  std::ifstream in(whole);
  std::string line;
  std::getline(in, line);
  for (size_t cut = 1; cut < line.size(); ++cut) {
    const std::string torn = dir + "/torn-" + std::to_string(cut);
    { std::ofstream(torn) << line << "\n" << line.substr(0, cut); }
    Result<std::vector<TokenClaims>> back = ReadIssuedTokens(torn);
    REQUIRE(back.ok());
    INFO("cut at " << cut << ": " << line.substr(0, cut));
    CHECK(back->size() == 1);
  }
  // The next token appended after a torn line is lost with it; later ones read.
  const std::string torn = dir + "/torn-then-more";
  { std::ofstream(torn) << line.substr(0, 20); }
  REQUIRE(AppendIssuedToken(torn, a).ok());
  REQUIRE(AppendIssuedToken(torn, b).ok());
  Result<std::vector<TokenClaims>> back = ReadIssuedTokens(torn);
  REQUIRE(back.ok());
  REQUIRE(back->size() == 1);
  CHECK((*back)[0].id == b.id);
}
