#include "shoal/file_copy.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <vector>

#include "shoal/posix_file.h"

namespace shoal {
namespace {

Status CopyByReadWrite(int src, uint64_t src_offset, int dst, uint64_t dst_offset, uint64_t len,
                       const std::string& target) {
  constexpr uint64_t kStep = 1u << 20;
  std::vector<uint8_t> buf(static_cast<size_t>(std::min(len, kStep)));
  for (uint64_t done = 0; done < len;) {
    size_t want = static_cast<size_t>(std::min(len - done, kStep));
    auto got = PreadFull(src, buf.data(), want, src_offset + done, target);
    if (!got.ok()) return got.status();
    if (*got != want)
      return Status::Corruption("the source of " + target + " shrank while it was copied");
    SHOAL_RETURN_IF_ERROR(PwriteFull(dst, buf.data(), want, dst_offset + done, target));
    done += want;
  }
  return Status::OK();
}

}  // namespace

Status CopyFileRange(int src, uint64_t src_offset, int dst, uint64_t dst_offset, uint64_t len,
                     const std::string& target) {
  uint64_t done = 0;
  while (done < len) {
    loff_t in = static_cast<loff_t>(src_offset + done);
    loff_t out = static_cast<loff_t>(dst_offset + done);
    ssize_t n = ::copy_file_range(src, &in, dst, &out, static_cast<size_t>(len - done), 0);
    if (n > 0) {
      done += static_cast<uint64_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n == 0 || errno == EXDEV || errno == ENOSYS || errno == EOPNOTSUPP || errno == EINVAL)
      break;
    return Status::FromErrno("copy into " + target, errno);
  }
  if (done == len) return Status::OK();
  return CopyByReadWrite(src, src_offset + done, dst, dst_offset + done, len - done, target);
}

}  // namespace shoal
