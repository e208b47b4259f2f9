#include "admin/recover_command.h"

#include <pwd.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>

#include "common/store_flags.h"
#include "registry/manifest_archive.h"
#include "registry/registry_store.h"
#include "shoal/manifest_codec.h"
#include "shoal/origin.h"
#include "shoal/utc_time.h"
#include "storage/registry_open.h"

namespace shoal::tracker {
namespace {

std::string LocalSubject() {
  struct passwd* pw = ::getpwuid(::geteuid());
  return "local:" + (pw != nullptr ? std::string(pw->pw_name) : std::to_string(::geteuid()));
}

}  // namespace

void AddRecoverFlags(CLI::App* cmd, RecoverFlags* f) {
  TrackerOptions& o = f->opts;
  cmd->add_option("--data-dir", o.data_dir, "the tracker's data folder (its LevelDB registry)")
      ->capture_default_str();
  AddRegistryFlags(cmd, &o);
  AddOriginFlags(cmd, &o.origin);
  cmd->add_flag("--dry-run", f->dry_run, "list what would be recovered; change nothing");
}

Status RunRecover(const RecoverFlags& f) {
  auto origin = OpenOrigin(f.opts.origin);
  if (!origin.ok()) return origin.status().WithContext("open origin " + f.opts.origin.url);
  ManifestArchive archive(**origin);
  auto kv = OpenRegistryKv(f.opts);
  if (!kv.ok()) return kv.status();
  RegistryStore store(std::move(kv).value(), &archive);
  const std::string subject = LocalSubject();
  uint64_t recovered = 0, present = 0;
  Status s = archive.ForEach(
      [&](const std::string& ns, const std::string& name, const StoredVersion& v) -> Status {
        Result<StoredVersion> there = store.GetVersion(ns, name, v.id);
        if (there.ok()) {
          ++present;
          return Status::OK();
        }
        if (!there.status().IsNotFound()) return there.status();
        Result<Manifest> m = DecodeManifest(v.manifest_bytes);
        if (!m.ok()) return m.status().WithContext("archived manifest of " + v.id.ShortHex());
        if (m->ns != ns || m->name != name) {
          return Status::Corruption("archived manifest " + ManifestArchive::KeyOf(ns, name, v.id) +
                                    " is of " + m->ns + "/" + m->name);
        }
        std::printf("%s %s/%s:%s\n", f.dry_run ? "would recover" : "recovered", ns.c_str(),
                    name.c_str(), v.id.ToHex().c_str());
        ++recovered;
        if (f.dry_run) return Status::OK();
        AuditEntry audit{0,
                         NowMs(),
                         subject,
                         "",
                         "recover",
                         ns + "/" + name + ":" + v.id.ToHex(),
                         "from " + (*origin)->Describe()};
        return store.CommitVersion(*m, v, {}, audit).status();
      });
  if (!s.ok()) return s;
  std::printf("%s %llu versions from %s; %llu already in %s\n",
              f.dry_run ? "would recover" : "recovered", static_cast<unsigned long long>(recovered),
              (*origin)->Describe().c_str(), static_cast<unsigned long long>(present),
              store.Describe().c_str());
  return Status::OK();
}

}  // namespace shoal::tracker
