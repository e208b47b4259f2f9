// `shoal mount ns/model:ref DIR`: shows a published version as a read-only
// folder, in the foreground, until SIGTERM, SIGINT or `fusermount3 -u DIR`.
// The agent resolves the reference once; its chunks come from the agent's
// cache as reads need them (cli/mount_link.h, cli/mount_fs.h).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>

#include "cli/commands.h"
#include "cli/mount_fs.h"
#include "cli/mount_link.h"
#include "cli/mount_tree.h"

namespace shoal {
namespace {

struct MountArgs {
  std::string ref;
  std::string dir;
  std::string token;
  std::string agent_socket = "/run/shoald/shoald.sock";
  int64_t call_timeout_ms = 30000;
  size_t open_chunks = 16;
  uint32_t read_ahead = 4;
  unsigned threads = 16;
  bool allow_other = false;
  bool splice = true;
};

// The FUSE session over `fs`, mounted on `dir` until it ends.
Status Serve(MountFs& fs, const std::string& dir, const std::string& fsname, const MountArgs& a) {
  std::string opts = "ro,nosuid,nodev,default_permissions,subtype=shoal,fsname=" + fsname;
  if (a.allow_other) opts += ",allow_other";
  const char* argv[] = {"shoal", "-o", opts.c_str()};
  fuse_args args = FUSE_ARGS_INIT(3, const_cast<char**>(argv));
  fuse_session* se = fuse_session_new(&args, &MountFs::Ops(), sizeof(fuse_lowlevel_ops), &fs);
  if (se == nullptr) return Status::InvalidArgument("cannot start a FUSE session with -o " + opts);
  // SIGINT, SIGTERM and SIGHUP end the session; the mount goes with it.
  if (fuse_set_signal_handlers(se) != 0) {
    fuse_session_destroy(se);
    return Status::IOError("cannot install the FUSE signal handlers");
  }
  if (fuse_session_mount(se, dir.c_str()) != 0) {
    fuse_remove_signal_handlers(se);
    fuse_session_destroy(se);
    return Status::IOError("cannot mount on " + dir +
                           "; is /dev/fuse there, fusermount3 installed, and " + dir +
                           " an empty folder?");
  }
  std::printf("mounted %s at %s\n", fsname.c_str(), dir.c_str());
  std::fflush(stdout);
  fuse_loop_config* cfg = fuse_loop_cfg_create();
  fuse_loop_cfg_set_max_threads(cfg, std::max(1u, a.threads));
  const int rc = fuse_session_loop_mt(se, cfg);
  fuse_loop_cfg_destroy(cfg);
  fuse_session_unmount(se);
  fuse_remove_signal_handlers(se);
  fuse_session_destroy(se);
  // A signal's number, or 0 after fusermount3 -u: both a clean end.
  if (rc < 0) return Status::FromErrno("serve the mount on " + dir, -rc);
  return Status::OK();
}

Status RunMount(const MountArgs& a) {
  if (a.token.empty()) return Status::InvalidArgument("no token; pass --token or set SHOAL_TOKEN");
  if (a.call_timeout_ms <= 0) return Status::InvalidArgument("--call-timeout-ms must be positive");
  std::error_code ec;
  const std::string dir = std::filesystem::absolute(a.dir, ec).lexically_normal().string();
  if (!std::filesystem::is_directory(dir, ec))
    return Status::InvalidArgument("mount point " + dir + " is not a folder");
  MountLinkOptions lo;
  lo.agent_socket = a.agent_socket;
  lo.ref = a.ref;
  lo.token = a.token;
  lo.call_timeout = std::chrono::milliseconds(a.call_timeout_ms);
  auto link = MountLink::Open(lo);
  if (!link.ok()) return link.status();
  const MountedVersion& v = (*link)->version();
  std::vector<std::string> paths;
  paths.reserve(v.files.size());
  for (const MountedFile& f : v.files) paths.push_back(f.path);
  auto tree = MountTree::Build(paths, v.empty_dirs);
  if (!tree.ok()) return tree.status();
  MountFsOptions fo;
  fo.open_chunks = a.open_chunks;
  fo.read_ahead = a.read_ahead;
  fo.splice = a.splice;
  MountFs fs(fo, **link, *tree);
  return Serve(fs, dir, v.ns + "/" + v.name + ":" + v.version.substr(0, 12), a);
}

}  // namespace

void RegisterMount(CLI::App& app, CommandRunner* run) {
  auto a = std::make_shared<MountArgs>();
  CLI::App* cmd =
      app.add_subcommand("mount", "show a version as a read-only folder, read through the agent");
  cmd->add_option("ref", a->ref, "ns/model[:tag-or-version], resolved once")->required();
  cmd->add_option("dir", a->dir, "an empty folder to mount on")->required();
  cmd->add_option("--token", a->token, "token that may read the namespace")->envname("SHOAL_TOKEN");
  cmd->add_option("--agent", a->agent_socket, "the agent's control socket")
      ->envname("SHOAL_AGENT_SOCKET")
      ->capture_default_str();
  cmd->add_option("--call-timeout-ms", a->call_timeout_ms,
                  "a read waits this long for the agent before failing with EIO")
      ->capture_default_str();
  cmd->add_option("--open-chunks", a->open_chunks, "chunk files kept open (and pinned)")
      ->capture_default_str();
  cmd->add_option("--read-ahead", a->read_ahead,
                  "pieces fetched ahead of a stream (back-to-back reads past 2 MiB)")
      ->capture_default_str();
  cmd->add_option("--threads", a->threads, "FUSE worker threads, at most")->capture_default_str();
  cmd->add_flag("--splice,!--no-splice", a->splice,
                "splice chunk files into the kernel's answers (--no-splice: copy them)");
  cmd->add_flag("--allow-other", a->allow_other,
                "let other users (other containers' processes) read the mount");
  cmd->callback([a, run] { *run = [a] { return RunMount(*a); }; });
}

}  // namespace shoal
