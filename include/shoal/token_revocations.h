// Token revocations: which tokens the tracker no longer honours, though
// their signature and expiry are fine.
//
// A revocation names one token by its id, or a subject with a cutoff: every
// token of that subject issued at or before the cutoff is dead, and tokens
// minted for the subject later are not. The tracker keeps the list in its
// registry and numbers each revocation (`seq`, from 1); the highest number
// is the list's generation. Agents hold a copy that their heartbeat brings
// up to date, and match callers' tokens against it (PeekTokenClaims in
// token.h), so a revoked token stops reading within one heartbeat.
#ifndef SHOAL_TOKEN_REVOCATIONS_H_
#define SHOAL_TOKEN_REVOCATIONS_H_

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "shoal/status.h"
#include "shoal/token.h"

namespace shoal {

struct Revocation {
  enum class Kind : uint8_t { kTokenId = 0, kSubject = 1 };

  uint64_t seq = 0;  // position in the tracker's list, from 1
  Kind kind = Kind::kTokenId;
  std::string value;      // the token id, or the subject
  int64_t cutoff_ms = 0;  // kSubject: tokens issued at or before this (Unix ms) are dead
  int64_t at_ms = 0;      // when it was revoked, Unix ms
  std::string by;         // who revoked: an admin token's subject, or "local:<unix user>"

  // True if this revocation kills the token with `claims`.
  bool Matches(const TokenClaims& claims) const;
  // OK if `value` is a well-formed token id or subject (as TokenClaims::Validate
  // wants them) and the times are not negative; InvalidArgument otherwise.
  Status Validate() const;
  // "token 3fa2... of 'ci'" or "every token of 'ci' issued up to <time>".
  std::string Describe() const;
};

// "id" or "subject".
const char* RevocationKindName(Revocation::Kind kind);

// The revocations one process knows, indexed for matching.
//
// Thread-safety: every method may be called from any thread.
class RevocationList {
 public:
  RevocationList() = default;
  RevocationList(const RevocationList&) = delete;
  RevocationList& operator=(const RevocationList&) = delete;

  // Adds revocations whose seq is above generation(); older ones are
  // skipped, so a delta may be applied twice.
  void Add(const std::vector<Revocation>& revocations);
  // Replaces the whole list (an agent whose tracker lost or replaced its
  // list); the generation becomes the highest seq in `all`.
  void Reset(const std::vector<Revocation>& all);

  // The revocation that kills the token with `claims`, if any.
  std::optional<Revocation> Find(const TokenClaims& claims) const;
  // Unauthenticated naming the token and when it was revoked, or OK.
  Status Check(const TokenClaims& claims) const;

  // The highest seq known; 0 when empty.
  uint64_t generation() const;
  // Which list the seqs count in: the tracker draws a random one at each
  // start, and an agent keeps the one it last replaced its list from. Seqs
  // from another source say nothing (a restored registry renumbers), so
  // an agent whose source differs gets the whole list again.
  uint64_t source() const;
  void set_source(uint64_t source);
  // Every revocation with seq above `generation`, oldest first.
  std::vector<Revocation> Since(uint64_t generation) const;

 private:
  void AddLocked(const Revocation& r);  // REQUIRES: mu_ held

  mutable std::mutex mu_;
  std::vector<Revocation> all_;                    // protected by mu_; by seq
  std::map<std::string, size_t> by_token_id_;      // protected by mu_; index into all_
  std::map<std::string, int64_t> subject_cutoff_;  // protected by mu_; the latest cutoff
  std::map<std::string, size_t> by_subject_;       // protected by mu_; the revocation with it
  uint64_t generation_ = 0;                        // protected by mu_
  uint64_t source_ = 0;                            // protected by mu_
};

}  // namespace shoal

#endif  // SHOAL_TOKEN_REVOCATIONS_H_
