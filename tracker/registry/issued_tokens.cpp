#include "registry/issued_tokens.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <unordered_set>

#include "registry/registry_store.h"

namespace shoal::tracker {

// "t1 <id> <subject> <role> <ns,ns> <issued ms> <expires ms> .": ids,
// subjects and namespaces hold no spaces or commas (TokenClaims::Validate).
// The closing "." tells a whole line from one torn inside a number.
std::string EncodeIssuedToken(const TokenClaims& c) {
  std::string ns;
  for (const std::string& n : c.namespaces) ns += (ns.empty() ? "" : ",") + n;
  return "t1 " + c.id + " " + c.subject + " " + RoleName(c.role) + " " + ns + " " +
         std::to_string(c.issued_at_ms) + " " + std::to_string(c.expires_at_ms) + " .";
}

bool DecodeIssuedToken(const std::string& line, TokenClaims* c) {
  std::vector<std::string> f;
  size_t start = 0;
  while (start <= line.size() && f.size() < 9) {
    size_t end = line.find(' ', start);
    if (end == std::string::npos) end = line.size();
    f.push_back(line.substr(start, end - start));
    start = end + 1;
  }
  if (f.size() != 8 || f[0] != "t1" || f[7] != ".") return false;
  Result<Role> role = ParseRole(f[3]);
  if (!role.ok()) return false;
  c->id = f[1];
  c->subject = f[2];
  c->role = *role;
  c->namespaces.clear();
  for (size_t at = 0; at <= f[4].size();) {
    size_t comma = f[4].find(',', at);
    if (comma == std::string::npos) comma = f[4].size();
    c->namespaces.push_back(f[4].substr(at, comma - at));
    at = comma + 1;
  }
  char* end = nullptr;
  c->issued_at_ms = std::strtoll(f[5].c_str(), &end, 10);
  if (f[5].empty() || *end != '\0') return false;
  c->expires_at_ms = std::strtoll(f[6].c_str(), &end, 10);
  if (f[6].empty() || *end != '\0') return false;
  return c->Validate().ok();
}

std::string IssuedTokensPath(const std::string& data_dir) { return data_dir + "/issued-tokens"; }

Status AppendIssuedToken(const std::string& path, const TokenClaims& claims) {
  const std::string line = EncodeIssuedToken(claims) + "\n";
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return Status::FromErrno("open " + path, errno);
  ssize_t n = ::write(fd, line.data(), line.size());
  int write_err = errno;
  int sync = ::fsync(fd);
  int sync_err = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(line.size())) {
    return Status::FromErrno("append to " + path, n < 0 ? write_err : EIO);
  }
  if (sync != 0) return Status::FromErrno("fsync " + path, sync_err);
  return Status::OK();
}

Result<std::vector<TokenClaims>> ReadIssuedTokens(const std::string& path) {
  std::ifstream in(path);
  std::vector<TokenClaims> out;
  if (!in) {
    if (::access(path.c_str(), F_OK) != 0 && errno == ENOENT) return out;
    return Status::IOError("cannot read " + path);
  }
  std::string line;
  while (std::getline(in, line)) {
    TokenClaims c;
    if (DecodeIssuedToken(line, &c)) out.push_back(std::move(c));
  }
  return out;
}

Result<std::vector<TokenClaims>> ListIssuedTokens(const std::string& path, RegistryStore& store) {
  Result<std::vector<TokenClaims>> out = ReadIssuedTokens(path);
  if (!out.ok()) return out.status();
  Result<std::vector<TokenClaims>> shared = store.IssuedTokens();
  if (!shared.ok()) return shared.status().WithContext("read issued tokens from the registry");
  std::unordered_set<std::string> seen;
  for (const TokenClaims& c : *out) seen.insert(c.id);
  for (TokenClaims& c : *shared) {
    if (seen.insert(c.id).second) out->push_back(std::move(c));
  }
  std::stable_sort(out->begin(), out->end(), [](const TokenClaims& a, const TokenClaims& b) {
    return a.issued_at_ms < b.issued_at_ms;
  });
  return out;
}

}  // namespace shoal::tracker
