#include "admin/keys_command.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>

#include "shoal/manifest_signer.h"
#include "shoal/peer_cert.h"
#include "shoal/token.h"

namespace shoal::tracker {

void AddKeysCommands(CLI::App* keys, KeysFlags* f) {
  CLI::App* create =
      keys->add_subcommand("create", "make the token secret, signing key and peer CA");
  create->add_option("--secrets-dir", f->secrets_dir, "where to keep them (made 0700)")->required();
}

Status RunKeysCreate(const KeysFlags& f) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(f.secrets_dir, ec);
  if (ec) return Status::IOError("create --secrets-dir " + f.secrets_dir + ": " + ec.message());
  fs::permissions(f.secrets_dir, fs::perms::owner_all, fs::perm_options::replace, ec);
  if (ec) return Status::IOError("chmod 0700 " + f.secrets_dir + ": " + ec.message());
  const char* files[] = {"token.secret", "signing.key", "peer-ca.key", "peer-ca.pem"};
  bool had[4];
  for (int i = 0; i < 4; ++i) had[i] = fs::exists(f.secrets_dir + "/" + files[i]);
  auto tokens = TokenAuthority::LoadOrCreate(f.secrets_dir + "/token.secret");
  if (!tokens.ok()) return tokens.status();
  auto signer = ManifestSigner::LoadOrCreate(f.secrets_dir + "/signing.key");
  if (!signer.ok()) return signer.status();
  auto ca = PeerCa::LoadOrCreate(f.secrets_dir);
  if (!ca.ok()) return ca.status().WithContext("peer CA");
  for (int i = 0; i < 4; ++i) {
    std::printf("%s %s/%s\n", had[i] ? "kept" : "made", f.secrets_dir.c_str(), files[i]);
  }
  std::printf("signing key %s\n", (*signer)->key_id().c_str());
  return Status::OK();
}

}  // namespace shoal::tracker
