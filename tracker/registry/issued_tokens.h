// The issued-tokens journal: what `shoal-tracker token create` minted, so
// `token list` can show it. One line per token in <data-dir>/issued-tokens,
// holding its claims (id, subject, role, namespaces, times) and never its
// MAC, so the file grants nothing.
//
// Why a file and not the registry: `token create` runs beside a running
// tracker (kubectl exec in the tracker's pod, test fixtures, local scripts),
// and the running tracker holds the LevelDB lock. Appending a line needs no
// lock: each record is one write(2) on an O_APPEND descriptor, followed by
// fsync, so concurrent minters never interleave and an acknowledged token
// is on disk. The tracker reads the file whenever /v1/tokens is asked, so it
// needs no import step. A line torn by a crash mid-write fails to parse
// and is skipped (with the record appended right after it, which lands on
// the same line); every other line still reads.
//
// A fleet's trackers each have their own data folder, so a token minted on
// one host would be missing from another's file. With an etcd registry
// (--registry etcd://...) `token create` also records the claims there
// (I|<token id>, registry_store.h), which needs no lock, and the lists
// show the file and the registry together. With LevelDB the registry stays
// out of it: the running tracker holds the LevelDB lock, so the file is the
// only record, as above.
//
// Thread-safety: free functions; concurrent appends from any processes are
// safe, and a reader sees each line whole or not at all.
#ifndef SHOAL_TRACKER_ISSUED_TOKENS_H_
#define SHOAL_TRACKER_ISSUED_TOKENS_H_

#include <string>
#include <vector>

#include "shoal/status.h"
#include "shoal/token.h"

namespace shoal::tracker {

class RegistryStore;

// <data_dir>/issued-tokens
std::string IssuedTokensPath(const std::string& data_dir);

// Appends `claims` to the journal at `path` (created mode 0600), synced.
// REQUIRES: claims.Validate().ok().
Status AppendIssuedToken(const std::string& path, const TokenClaims& claims);

// Every whole, well-formed record in the journal, oldest first; an empty
// list if there is no journal yet.
Result<std::vector<TokenClaims>> ReadIssuedTokens(const std::string& path);

// The journal at `path` and the tokens recorded in `store`'s registry
// together, one entry per token id, oldest issued first: what `token list`
// and GET /v1/tokens show.
Result<std::vector<TokenClaims>> ListIssuedTokens(const std::string& path, RegistryStore& store);

// One record as a line without its newline: "t1 <id> <subject> <role>
// <ns,ns> <issued ms> <expires ms> .", the form of both the journal and the
// registry. Decode is false for anything else, or claims that do not
// validate.
std::string EncodeIssuedToken(const TokenClaims& claims);
bool DecodeIssuedToken(const std::string& line, TokenClaims* claims);

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_ISSUED_TOKENS_H_
