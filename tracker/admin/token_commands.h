// `shoal-tracker token ...`: minting, listing and revoking access tokens.
//
//   token create --data-dir D [--registry etcd://...] --ns NS --role R --ttl 30d --subject S
//   token list   (--tracker URL --token ADMIN | --data-dir D [--registry etcd://...])
//   token revoke (--id ID | --subject S)
//                (--tracker URL --token ADMIN | --data-dir D [--registry etcd://...])
//
// create needs only the data folder (the secret), so it also works beside a
// running tracker; it records each token in the issued-tokens journal
// (issued_tokens.h), which needs no registry lock. Given a fleet's etcd
// registry, it records the token there too, so every tracker lists it.
//
// list and revoke reach revocations, which live in the registry. While a
// tracker on LevelDB runs it holds the registry's lock, so they go through
// its HTTP API (--tracker, with an admin token for every namespace;
// token_routes.h), and the audit log names the admin token's subject. With
// the tracker stopped, or with --registry naming a fleet's etcd (which
// takes no lock), --data-dir opens the registry directly, and the audit log
// names "local:<unix user>".
#ifndef SHOAL_TRACKER_TOKEN_COMMANDS_H_
#define SHOAL_TRACKER_TOKEN_COMMANDS_H_

#include <string>
#include <vector>

#include "shoal/status.h"

namespace CLI {
class App;
}

namespace shoal::tracker {

struct TokenFlags {
  std::string data_dir = "/var/lib/shoal-tracker";
  std::vector<std::string> namespaces;  // create
  std::string role = "read";            // create
  std::string ttl = "30d";              // create
  std::string subject;                  // create; revoke --subject
  std::string id;                       // revoke --id
  std::string tracker;                  // list, revoke: the running tracker's http(s)://host:port
  std::string tracker_ca;               // list, revoke: the CA its https certificate chains to
  std::string token;                    // list, revoke: an admin token, with --tracker
  std::string registry;                 // with --data-dir: "" (its LevelDB) or a fleet's etcd://...
  std::string registry_ca;              // PEM CA for an etcd+https:// registry
};

// Declares create, list and revoke under `token_cmd`, writing into `flags`.
void AddTokenCommands(CLI::App* token_cmd, TokenFlags* flags);

// Runs whichever of them was parsed.
Status RunTokenCommand(const CLI::App& token_cmd, const TokenFlags& flags);

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_TOKEN_COMMANDS_H_
