#include "admin/token_commands.h"

#include <capnp/compat/json.h>
#include <capnp/message.h>
#include <pwd.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>

#include "admin/admin_client.h"
#include "auth/token_verifier.h"
#include "http/token_routes.h"
#include "kv/etcd_kv.h"
#include "proto/record_codec.h"
#include "registry/issued_tokens.h"
#include "registry/registry_store.h"
#include "shoal/duration.h"
#include "shoal/proto/tracker.capnp.h"
#include "shoal/token.h"
#include "shoal/uri_encode.h"
#include "shoal/utc_time.h"
#include "storage/registry_open.h"

namespace shoal::tracker {
namespace {

// Where --registry and --registry-ca point, as the tracker would open them.
TrackerOptions RegistryOptions(const TokenFlags& f) {
  TrackerOptions o;
  o.data_dir = f.data_dir;
  o.registry = f.registry;
  o.registry_ca_file = f.registry_ca;
  return o;
}

// --registry is for a fleet's etcd; a tracker's LevelDB is --data-dir's.
Status CheckRegistry(const TokenFlags& f) {
  if (f.registry.empty()) return Status::OK();
  auto where = RegistryLocation::Parse(f.registry);
  if (!where.ok()) return where.status();
  if (!where->etcd) return Status::InvalidArgument("--registry names an etcd registry: etcd://...");
  return Status::OK();
}

Status CreateToken(const TokenFlags& f) {
  SHOAL_RETURN_IF_ERROR(CheckRegistry(f));
  auto role = ParseRole(f.role);
  if (!role.ok()) return role.status();
  auto ttl = ParseDuration(f.ttl);
  if (!ttl.ok()) return ttl.status().WithContext("--ttl");
  std::error_code ec;
  std::filesystem::create_directories(f.data_dir, ec);
  auto tokens = TokenAuthority::LoadOrCreate(f.data_dir + "/token.secret");
  if (!tokens.ok()) return tokens.status();
  TokenClaims c;
  c.id = NewTokenId();
  c.subject = f.subject;
  c.role = *role;
  c.namespaces = f.namespaces;
  c.issued_at_ms = NowMs();
  c.expires_at_ms = c.issued_at_ms + ttl->count();
  SHOAL_RETURN_IF_ERROR(c.Validate());
  // Recorded before it is printed: a token nobody can list is never handed out.
  if (!f.registry.empty()) {
    auto kv = OpenRegistryKv(RegistryOptions(f));
    if (!kv.ok()) return kv.status();
    RegistryStore shared(std::move(kv).value(), nullptr);
    SHOAL_RETURN_IF_ERROR(shared.AddIssuedToken(c));
  }
  SHOAL_RETURN_IF_ERROR(AppendIssuedToken(IssuedTokensPath(f.data_dir), c)
                            .WithContext("record the token for 'token list'"));
  std::printf("%s\n", tokens->Mint(c).c_str());
  return Status::OK();
}

// Where list and revoke go: the running tracker, or the stopped one's folder.
Status CheckTarget(const TokenFlags& f, const CLI::App& cmd) {
  const bool local = cmd.count("--data-dir") > 0;
  if (f.tracker.empty() == !local) {
    return Status::InvalidArgument(
        "give --tracker http://HOST:PORT --token ADMIN_TOKEN for a running tracker, or "
        "--data-dir DIR for a stopped one");
  }
  if (!f.tracker.empty() && f.token.empty()) {
    return Status::Unauthenticated("--tracker needs --token with an admin token for '*'");
  }
  return Status::OK();
}

// The registry of a stopped tracker, with its revocations loaded.
struct LocalRegistry {
  std::unique_ptr<RegistryStore> store;
  std::unique_ptr<TokenAuthority> authority;
  std::unique_ptr<TokenVerifier> verifier;
};

// The registry --registry names (a fleet's etcd), or the LevelDB in the
// data folder.
Result<std::unique_ptr<RegistryStore>> OpenStore(const TokenFlags& f) {
  SHOAL_RETURN_IF_ERROR(CheckRegistry(f));
  if (!f.registry.empty()) {
    auto kv = OpenRegistryKv(RegistryOptions(f));
    if (!kv.ok()) return kv.status();
    return std::make_unique<RegistryStore>(std::move(kv).value(), nullptr);
  }
  const std::string dir = f.data_dir + "/registry";
  if (!std::filesystem::exists(dir + "/CURRENT")) {
    return Status::NotFound("no registry at " + dir + "; is --data-dir the tracker's data folder?");
  }
  auto store = RegistryStore::Open(dir);
  if (!store.ok()) {
    return Status::Unavailable(store.status().message() +
                               "; while the tracker runs, use --tracker URL --token ADMIN_TOKEN");
  }
  return store;
}

Status OpenLocal(const TokenFlags& f, LocalRegistry* out) {
  auto store = OpenStore(f);
  if (!store.ok()) return store.status();
  auto authority = TokenAuthority::LoadOrCreate(f.data_dir + "/token.secret");
  if (!authority.ok()) return authority.status();
  out->store = std::move(store).value();
  out->authority = std::make_unique<TokenAuthority>(std::move(authority).value());
  out->verifier = std::make_unique<TokenVerifier>(*out->authority, *out->store);
  return out->verifier->Load();
}

std::string LocalUser() {
  struct passwd* pw = ::getpwuid(::geteuid());
  return "local:" + (pw != nullptr ? std::string(pw->pw_name) : std::to_string(::geteuid()));
}

std::string Join(capnp::List<capnp::Text>::Reader list) {
  std::string out;
  for (auto t : list) out += (out.empty() ? "" : ",") + std::string(t.cStr());
  return out;
}

// Prints GET /v1/tokens's JSON as a table: one token a line, never a MAC
// (the JSON holds none).
Status PrintTokens(const std::string& json) {
  capnp::MallocMessageBuilder b;
  auto list = b.initRoot<proto::IssuedTokenList>();
  capnp::JsonCodec codec;
  codec.handleByAnnotation<proto::IssuedTokenList>();
  KJ_IF_MAYBE (e, kj::runCatchingExceptions(
                      [&] { codec.decode(kj::StringPtr("{\"tokens\":" + json + "}"), list); })) {
    return Status::Corruption("the tracker's token list does not parse: " +
                              std::string(e->getDescription().cStr()).substr(0, 200));
  }
  const int64_t now = NowMs();
  std::printf("%-16s  %-24s  %-5s  %-20s  %-24s  %-24s  %s\n", "ID", "SUBJECT", "ROLE",
              "NAMESPACES", "ISSUED", "EXPIRES", "STATE");
  for (auto t : list.getTokens()) {
    std::string state = "active";
    if (t.getRevoked()) {
      state = "revoked " + FormatUtcMillis(t.getRevokedAtMs()) + " by " +
              std::string(t.getRevokedBy().cStr());
    } else if (t.getExpiresAtMs() <= now) {
      state = "expired";
    }
    std::printf("%-16s  %-24s  %-5s  %-20s  %-24s  %-24s  %s\n", t.getId().cStr(),
                t.getSubject().cStr(), RoleName(static_cast<Role>(t.getRole())),
                Join(t.getNamespaces()).c_str(), FormatUtcMillis(t.getIssuedAtMs()).c_str(),
                FormatUtcMillis(t.getExpiresAtMs()).c_str(), state.c_str());
  }
  return Status::OK();
}

Status ListTokens(const TokenFlags& f, const CLI::App& cmd) {
  SHOAL_RETURN_IF_ERROR(CheckTarget(f, cmd));
  if (!f.tracker.empty()) {
    Result<std::string> json = AdminRequest(f.tracker, f.tracker_ca, "GET", "/v1/tokens", f.token);
    if (!json.ok()) return json.status().WithContext("list tokens");
    return PrintTokens(*json);
  }
  LocalRegistry local;
  SHOAL_RETURN_IF_ERROR(OpenLocal(f, &local));
  Result<std::vector<TokenClaims>> issued =
      ListIssuedTokens(IssuedTokensPath(f.data_dir), *local.store);
  if (!issued.ok()) return issued.status();
  return PrintTokens(IssuedTokensJson(*issued, local.verifier->revocations()));
}

Status RevokeTokens(const TokenFlags& f, const CLI::App& cmd) {
  SHOAL_RETURN_IF_ERROR(CheckTarget(f, cmd));
  if (f.id.empty() == f.subject.empty()) {
    return Status::InvalidArgument("name what to revoke: --id TOKEN_ID or --subject SUBJECT");
  }
  const bool by_id = !f.id.empty();
  const Revocation::Kind kind = by_id ? Revocation::Kind::kTokenId : Revocation::Kind::kSubject;
  const std::string& value = by_id ? f.id : f.subject;
  Revocation done;
  if (!f.tracker.empty()) {
    std::string target =
        std::string("/v1/tokens/revoke?") + (by_id ? "id=" : "subject=") + UriEncodeQuery(value);
    Result<std::string> json = AdminRequest(f.tracker, f.tracker_ca, "POST", target, f.token);
    if (!json.ok()) return json.status().WithContext("revoke");
    capnp::MallocMessageBuilder b;
    auto r = b.initRoot<proto::Revocation>();
    capnp::JsonCodec codec;
    KJ_IF_MAYBE (e, kj::runCatchingExceptions([&] { codec.decode(kj::StringPtr(*json), r); })) {
      return Status::Corruption("the tracker's answer does not parse: " + json->substr(0, 200));
    }
    Result<Revocation> read = ReadRevocation(r.asReader());
    if (!read.ok()) return read.status();
    done = *read;
  } else {
    LocalRegistry local;
    SHOAL_RETURN_IF_ERROR(OpenLocal(f, &local));
    Result<Revocation> r = local.verifier->Revoke(kind, value, Revoker{LocalUser(), ""}, NowMs());
    if (!r.ok()) return r.status();
    done = *r;
  }
  std::printf("revoked %s\n", done.Describe().c_str());
  return Status::OK();
}

}  // namespace

void AddTokenCommands(CLI::App* token_cmd, TokenFlags* f) {
  CLI::App* create = token_cmd->add_subcommand("create", "mint a token and print it");
  create->add_option("--data-dir", f->data_dir, "the tracker's data folder (holds the secret)")
      ->capture_default_str();
  create->add_option("--ns", f->namespaces, "namespace the token may use; repeat, or '*' for all")
      ->required();
  create->add_option("--role", f->role, "read, write or admin")->capture_default_str();
  create->add_option("--ttl", f->ttl, "lifetime: 30d, 12h, 15m, 3600s")->capture_default_str();
  create->add_option("--subject", f->subject, "who holds the token, for the audit log")->required();
  create->add_option("--registry", f->registry,
                     "a fleet's etcd registry, etcd://host:port,.../prefix: record the token "
                     "there too, so every tracker lists it");
  create->add_option("--registry-ca", f->registry_ca, "PEM CA for an etcd+https:// registry");

  CLI::App* list =
      token_cmd->add_subcommand("list", "show every issued token and whether it is revoked");
  CLI::App* revoke = token_cmd->add_subcommand(
      "revoke", "revoke one token, or every token of a subject issued up to now");
  revoke->add_option("--id", f->id, "the id of the token to revoke (see 'token list')");
  revoke->add_option("--subject", f->subject,
                     "revoke every token of this subject issued up to now; later ones stay valid");
  for (CLI::App* cmd : {list, revoke}) {
    cmd->add_option("--tracker", f->tracker,
                    "a running tracker's HTTP address, http://host:port or https://host:port "
                    "(needs --token)");
    cmd->add_option("--tracker-ca", f->tracker_ca,
                    "PEM CA file the tracker's https certificate chains to; default: the system's");
    cmd->add_option("--token", f->token, "an admin token for every namespace, with --tracker");
    cmd->add_option("--data-dir", f->data_dir,
                    "a stopped tracker's data folder, instead of --tracker");
    cmd->add_option("--registry", f->registry,
                    "with --data-dir: a fleet's etcd registry, etcd://host:port,.../prefix, "
                    "instead of the folder's own (the tracker may run)");
    cmd->add_option("--registry-ca", f->registry_ca, "PEM CA for an etcd+https:// registry");
  }
}

Status RunTokenCommand(const CLI::App& token_cmd, const TokenFlags& f) {
  for (const CLI::App* cmd : token_cmd.get_subcommands()) {
    if (cmd->get_name() == "list") return ListTokens(f, *cmd);
    if (cmd->get_name() == "revoke") return RevokeTokens(f, *cmd);
  }
  return CreateToken(f);
}

}  // namespace shoal::tracker
