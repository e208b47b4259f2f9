#include "shoal/token_revocations.h"

#include "shoal/utc_time.h"

namespace shoal {

const char* RevocationKindName(Revocation::Kind kind) {
  return kind == Revocation::Kind::kSubject ? "subject" : "id";
}

bool Revocation::Matches(const TokenClaims& claims) const {
  if (kind == Kind::kTokenId) return claims.id == value;
  return claims.subject == value && claims.issued_at_ms <= cutoff_ms;
}

Status Revocation::Validate() const {
  // The token rules for ids and subjects are one: borrow them.
  TokenClaims probe;
  probe.id = value;
  probe.subject = value;
  probe.namespaces = {"*"};
  Status s = probe.Validate();
  if (!s.ok()) {
    return Status::InvalidArgument(std::string("a revoked token ") + RevocationKindName(kind) +
                                   " must be 1-128 characters of [A-Za-z0-9._@:+/-]");
  }
  if (cutoff_ms < 0 || at_ms < 0) return Status::InvalidArgument("revocation times must be >= 0");
  return Status::OK();
}

std::string Revocation::Describe() const {
  if (kind == Kind::kTokenId) return "token " + value;
  return "every token of '" + value + "' issued up to " + FormatUtcMillis(cutoff_ms);
}

void RevocationList::AddLocked(const Revocation& r) {
  if (r.seq <= generation_) return;
  all_.push_back(r);
  const size_t at = all_.size() - 1;
  if (r.kind == Revocation::Kind::kTokenId) {
    by_token_id_.emplace(r.value, at);
  } else {
    auto [it, fresh] = subject_cutoff_.emplace(r.value, r.cutoff_ms);
    if (fresh || r.cutoff_ms >= it->second) {
      it->second = r.cutoff_ms;
      by_subject_[r.value] = at;
    }
  }
  generation_ = r.seq;
}

void RevocationList::Add(const std::vector<Revocation>& revocations) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const Revocation& r : revocations) AddLocked(r);
}

void RevocationList::Reset(const std::vector<Revocation>& all) {
  std::lock_guard<std::mutex> lock(mu_);
  all_.clear();
  by_token_id_.clear();
  subject_cutoff_.clear();
  by_subject_.clear();
  generation_ = 0;
  for (const Revocation& r : all) AddLocked(r);
}

std::optional<Revocation> RevocationList::Find(const TokenClaims& claims) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto id = by_token_id_.find(claims.id);
  if (id != by_token_id_.end()) return all_[id->second];
  auto cutoff = subject_cutoff_.find(claims.subject);
  if (cutoff != subject_cutoff_.end() && claims.issued_at_ms <= cutoff->second) {
    return all_[by_subject_.at(claims.subject)];
  }
  return std::nullopt;
}

Status RevocationList::Check(const TokenClaims& claims) const {
  std::optional<Revocation> r = Find(claims);
  if (!r) return Status::OK();
  return Status::Unauthenticated("token " + claims.id + " for '" + claims.subject +
                                 "' was revoked at " + FormatUtcMillis(r->at_ms) +
                                 "; ask an administrator for a new one");
}

uint64_t RevocationList::generation() const {
  std::lock_guard<std::mutex> lock(mu_);
  return generation_;
}

uint64_t RevocationList::source() const {
  std::lock_guard<std::mutex> lock(mu_);
  return source_;
}

void RevocationList::set_source(uint64_t source) {
  std::lock_guard<std::mutex> lock(mu_);
  source_ = source;
}

std::vector<Revocation> RevocationList::Since(uint64_t generation) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Revocation> out;
  for (const Revocation& r : all_) {
    if (r.seq > generation) out.push_back(r);
  }
  return out;
}

}  // namespace shoal
