#include "daemon/control_socket.h"

#include <grp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace shoal {

PeerCred PeerOf(kj::AsyncIoStream& stream) {
  PeerCred out;
  struct ucred cred {};
  kj::uint len = sizeof(cred);
  KJ_IF_MAYBE (e, kj::runCatchingExceptions(
                      [&] { stream.getsockopt(SOL_SOCKET, SO_PEERCRED, &cred, &len); })) {
    (void)e;
    return out;
  }
  out.pid = cred.pid;
  out.uid = cred.uid;
  out.gid = cred.gid;
  return out;
}

Status SetSocketAccess(const std::string& path, const std::string& mode, const std::string& group) {
  if (!group.empty()) {
    struct group* g = ::getgrnam(group.c_str());
    if (g == nullptr)
      return Status::InvalidArgument("--control-socket-group: no group named '" + group + "'");
    if (::chown(path.c_str(), static_cast<uid_t>(-1), g->gr_gid) != 0) {
      return Status::FromErrno("give " + path + " to group " + group, errno);
    }
  }
  mode_t bits = static_cast<mode_t>(std::stoul(mode, nullptr, 8));
  if (::chmod(path.c_str(), bits) != 0) return Status::FromErrno("chmod " + path, errno);
  return Status::OK();
}

}  // namespace shoal
