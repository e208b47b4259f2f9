#include "cli/mount_fs.h"

#include <fcntl.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <new>
#include <string>
#include <vector>

namespace shoal {
namespace {

const char kVersionXattr[] = "user.shoal.version";
const char kPiecesRootXattr[] = "user.shoal.pieces_root";

// A run of back-to-back reads longer than this is a stream, worth fetching
// ahead of. The kernel splits one large read into several back-to-back
// requests, so a shorter run may be a single random read, whose first
// chunk would only be slowed by fetches beside it.
constexpr uint64_t kStreamBytes = 2 << 20;
// Requests of one run may reach the mount's threads out of order; one that
// starts within this of the run's ends still continues it.
constexpr uint64_t kStreamGap = 1 << 20;
// How much of the next chunk a stream reads ahead of itself (PrimeChunk).
constexpr uint64_t kPrimeBytes = 4 << 20;

// Starts the kernel's read-ahead of a chunk file before a stream reaches
// it, so that the stream's first reads of the chunk do not wait for the
// disk. Each chunk is a file of its own, whose read-ahead window starts
// small (a few hundred KiB) and grows as it is read: on its own the stream
// waited for the disk through the first 2 to 4 MiB of every chunk.
// Reading the first kPrimeBytes now walks that window up to the device's
// full read-ahead, which sets off reads of the rest of the chunk too.
// sendfile to /dev/null reads them without copying a byte, and a second
// description of the file (not a dup of the lease's) keeps this read-ahead
// state apart from the stream's own. posix_fadvise(WILLNEED) measured
// slower: it reads in single pages, stops at the device's read-ahead size
// (8 MiB here), and leaves the window unramped. Blocks until those bytes
// are read; errors are ignored, as the stream reads the chunk either way.
void PrimeChunk(const ChunkLease& chunk) {
  const int src =
      ::open(("/proc/self/fd/" + std::to_string(chunk.fd())).c_str(), O_RDONLY | O_CLOEXEC);
  const int sink = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (src >= 0 && sink >= 0) {
    off_t pos = static_cast<off_t>(chunk.offset());
    const off_t stop = pos + static_cast<off_t>(std::min(chunk.length(), kPrimeBytes));
    while (pos < stop) {
      if (::sendfile(sink, src, &pos, static_cast<size_t>(stop - pos)) <= 0) break;
    }
  }
  if (src >= 0) ::close(src);
  if (sink >= 0) ::close(sink);
}

// One open file's current run of reads, to tell a stream.
class OpenFile {
 public:
  // Records a read of [start, end); true if it continues a stream.
  bool Streaming(uint64_t start, uint64_t end) {
    std::lock_guard<std::mutex> l(mu_);
    if (start + kStreamGap < run_start_ || start > run_end_ + kStreamGap) {
      run_start_ = start;
      run_end_ = end;
      primed_end_ = 0;  // a new run primes its pieces again
    } else {
      run_start_ = std::min(run_start_, start);
      run_end_ = std::max(run_end_, end);
    }
    return run_end_ - run_start_ > kStreamBytes;
  }

  // True the first time the current run asks to prime `piece` (or a later
  // one): each chunk is primed once per run.
  bool ClaimPrime(uint64_t piece) {
    std::lock_guard<std::mutex> l(mu_);
    if (piece < primed_end_) return false;
    primed_end_ = piece + 1;
    return true;
  }

 private:
  std::mutex mu_;
  uint64_t run_start_ = 0;   // protected by mu_
  uint64_t run_end_ = 0;     // protected by mu_
  uint64_t primed_end_ = 0;  // protected by mu_: the pieces below it were primed
};

}  // namespace

struct MountFs::Impl {
  static MountFs& Of(fuse_req_t req) { return *static_cast<MountFs*>(fuse_req_userdata(req)); }

  static struct stat Attr(const MountFs& fs, uint64_t ino, const MountNode& n) {
    struct stat st {};
    st.st_ino = ino;
    st.st_uid = ::getuid();
    st.st_gid = ::getgid();
    const MountedVersion& v = fs.link_.version();
    st.st_mtim.tv_sec = v.created_at_ms / 1000;
    st.st_mtim.tv_nsec = (v.created_at_ms % 1000) * 1000000;
    st.st_ctim = st.st_mtim;
    st.st_atim = st.st_mtim;
    st.st_blksize = 4096;
    if (n.dir) {
      st.st_mode = S_IFDIR | 0555;
      st.st_nlink = 2;
    } else {
      const MountedFile& f = v.files[static_cast<size_t>(n.file)];
      st.st_mode = S_IFREG | (f.mode & 07777);
      st.st_nlink = 1;
      st.st_size = static_cast<off_t>(f.size);
      st.st_blocks = static_cast<blkcnt_t>((f.size + 511) / 512);
    }
    return st;
  }

  // Lets libfuse splice the chunk files into the kernel's answer pages
  // rather than copying them through this process.
  static void Init(void* userdata, fuse_conn_info* conn) {
    if (!static_cast<MountFs*>(userdata)->options_.splice) return;
    conn->want |= conn->capable & (FUSE_CAP_SPLICE_WRITE | FUSE_CAP_SPLICE_MOVE);
  }

  static void Lookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
    MountFs& fs = Of(req);
    const uint64_t ino = fs.tree_.Lookup(parent, name);
    if (ino == 0) {
      // Names that do not exist never will: the kernel may remember that.
      fuse_entry_param miss{};
      miss.entry_timeout = fs.options_.cache_seconds;
      fuse_reply_entry(req, &miss);
      return;
    }
    fuse_entry_param e{};
    e.ino = ino;
    e.attr = Attr(fs, ino, *fs.tree_.Get(ino));
    e.attr_timeout = fs.options_.cache_seconds;
    e.entry_timeout = fs.options_.cache_seconds;
    fuse_reply_entry(req, &e);
  }

  static void GetAttr(fuse_req_t req, fuse_ino_t ino, fuse_file_info*) {
    MountFs& fs = Of(req);
    const MountNode* n = fs.tree_.Get(ino);
    if (n == nullptr) {
      fuse_reply_err(req, ENOENT);
      return;
    }
    struct stat st = Attr(fs, ino, *n);
    fuse_reply_attr(req, &st, fs.options_.cache_seconds);
  }

  static void ReadDir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info*) {
    MountFs& fs = Of(req);
    const MountNode* n = fs.tree_.Get(ino);
    if (n == nullptr || !n->dir) {
      fuse_reply_err(req, n == nullptr ? ENOENT : ENOTDIR);
      return;
    }
    std::vector<std::pair<std::string, uint64_t>> entries = {{".", ino}, {"..", n->parent}};
    for (const auto& [name, child] : n->children) entries.emplace_back(name, child);
    std::vector<char> buf(size);
    size_t used = 0;
    for (size_t i = static_cast<size_t>(std::max<off_t>(off, 0)); i < entries.size(); ++i) {
      struct stat st {};
      st.st_ino = entries[i].second;
      st.st_mode = fs.tree_.Get(entries[i].second)->dir ? S_IFDIR : S_IFREG;
      const size_t need = fuse_add_direntry(req, buf.data() + used, size - used,
                                            entries[i].first.c_str(), &st, off_t(i + 1));
      if (need > size - used) break;
      used += need;
    }
    fuse_reply_buf(req, buf.data(), used);
  }

  static void Open(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
    MountFs& fs = Of(req);
    const MountNode* n = fs.tree_.Get(ino);
    if (n == nullptr || n->dir) {
      fuse_reply_err(req, n == nullptr ? ENOENT : EISDIR);
      return;
    }
    if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC) != 0) {
      fuse_reply_err(req, EROFS);
      return;
    }
    fi->keep_cache = 1;  // the bytes never change
    fi->fh = reinterpret_cast<uint64_t>(new OpenFile);
    if (fuse_reply_open(req, fi) != 0) delete reinterpret_cast<OpenFile*>(fi->fh);
  }

  static void Release(fuse_req_t req, fuse_ino_t, fuse_file_info* fi) {
    delete reinterpret_cast<OpenFile*>(fi->fh);
    fuse_reply_err(req, 0);
  }

  static void Read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi) {
    MountFs& fs = Of(req);
    const MountNode* n = fs.tree_.Get(ino);
    if (n == nullptr || n->dir || off < 0) {
      fuse_reply_err(req, EINVAL);
      return;
    }
    const uint32_t file = static_cast<uint32_t>(n->file);
    const MountedFile& f = fs.link_.version().files[file];
    const uint64_t piece_size = fs.link_.version().piece_size;
    const uint64_t start = static_cast<uint64_t>(off);
    const uint64_t end = std::min<uint64_t>(f.size, start + size);
    if (start >= end) {
      fuse_reply_buf(req, nullptr, 0);
      return;
    }
    auto* open = reinterpret_cast<OpenFile*>(fi->fh);
    const bool sequential = open != nullptr && open->Streaming(start, end);
    const uint64_t last_piece = (f.size - 1) / piece_size;
    const uint64_t first = start / piece_size;
    const size_t pieces = static_cast<size_t>((end - 1) / piece_size - first + 1);
    // The answer names the chunk files, not their bytes: libfuse splices
    // them into /dev/fuse where the session allows it (Init), and copies
    // them through a buffer where it does not. The leases keep the files
    // pinned until the answer is sent.
    std::vector<std::shared_ptr<ChunkLease>> leases;
    leases.reserve(pieces);
    std::vector<char> vec_bytes(sizeof(fuse_bufvec) + (pieces - 1) * sizeof(fuse_buf));
    auto* vec = new (vec_bytes.data()) fuse_bufvec{};
    vec->count = pieces;
    for (uint64_t pos = start; pos < end;) {
      const uint64_t piece = pos / piece_size;
      const uint64_t ahead =
          sequential ? std::min(last_piece, piece + fs.options_.read_ahead) : piece;
      auto lease = fs.Lease(file, piece, ahead);
      if (!lease.ok()) {
        std::fprintf(stderr, "shoal mount: %s\n", lease.status().ToString().c_str());
        fuse_reply_err(req, EIO);
        return;
      }
      const uint64_t in_piece = pos - piece * piece_size;
      if (in_piece >= (*lease)->length()) {  // the agent's chunk is shorter than the manifest's
        fuse_reply_err(req, EIO);
        return;
      }
      const uint64_t n_bytes = std::min(end - pos, (*lease)->length() - in_piece);
      fuse_buf& b = vec->buf[leases.size()];
      b = fuse_buf{};
      b.size = n_bytes;
      b.flags = static_cast<fuse_buf_flags>(FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK);
      b.fd = (*lease)->fd();
      b.pos = static_cast<off_t>((*lease)->offset() + in_piece);
      leases.push_back(std::move(*lease));
      pos += n_bytes;
    }
    // Once a stream is an eighth into a piece (not at its start, where the
    // next chunk's reads would compete with this one's first), this thread,
    // its answer sent, primes the next chunk. Its lease waits for the agent
    // if the chunk is not here yet; the stream's read-ahead has asked for it.
    // Decided before the answer: once it is sent, the reader may close the
    // file, and Release deletes `open`.
    const uint64_t at = end - 1;
    const uint64_t piece = at / piece_size;
    const bool prime = sequential && piece < last_piece && at % piece_size >= piece_size / 8 &&
                       open->ClaimPrime(piece + 1);
    fuse_reply_data(req, vec, FUSE_BUF_SPLICE_MOVE);
    if (prime) {
      auto next =
          fs.Lease(file, piece + 1, std::min(last_piece, piece + 1 + fs.options_.read_ahead));
      if (next.ok()) PrimeChunk(**next);
    }
  }

  static std::string XattrValue(MountFs& fs, const MountNode& n, const std::string& name,
                                bool* found) {
    *found = true;
    if (name == kVersionXattr) return fs.link_.version().version;
    if (name == kPiecesRootXattr && !n.dir)
      return fs.link_.version().files[static_cast<size_t>(n.file)].pieces_root;
    *found = false;
    return "";
  }

  static void GetXattr(fuse_req_t req, fuse_ino_t ino, const char* name, size_t size) {
    MountFs& fs = Of(req);
    const MountNode* n = fs.tree_.Get(ino);
    if (n == nullptr) {
      fuse_reply_err(req, ENOENT);
      return;
    }
    bool found = false;
    const std::string value = XattrValue(fs, *n, name, &found);
    if (!found) {
      fuse_reply_err(req, ENODATA);
    } else if (size == 0) {
      fuse_reply_xattr(req, value.size());
    } else if (size < value.size()) {
      fuse_reply_err(req, ERANGE);
    } else {
      fuse_reply_buf(req, value.data(), value.size());
    }
  }

  static void ListXattr(fuse_req_t req, fuse_ino_t ino, size_t size) {
    MountFs& fs = Of(req);
    const MountNode* n = fs.tree_.Get(ino);
    if (n == nullptr) {
      fuse_reply_err(req, ENOENT);
      return;
    }
    std::string names = std::string(kVersionXattr) + '\0';
    if (!n->dir) names += std::string(kPiecesRootXattr) + '\0';
    if (size == 0) {
      fuse_reply_xattr(req, names.size());
    } else if (size < names.size()) {
      fuse_reply_err(req, ERANGE);
    } else {
      fuse_reply_buf(req, names.data(), names.size());
    }
  }

  static void Statfs(fuse_req_t req, fuse_ino_t) {
    MountFs& fs = Of(req);
    struct statvfs st {};
    uint64_t bytes = 0;
    for (const MountedFile& f : fs.link_.version().files) bytes += f.size;
    st.f_bsize = 4096;
    st.f_frsize = 4096;
    st.f_blocks = (bytes + 4095) / 4096;
    st.f_files = fs.tree_.size();
    st.f_namemax = 255;
    st.f_flag = ST_RDONLY;
    fuse_reply_statfs(req, &st);
  }

  // Everything that would change the version.
  static void SetAttr(fuse_req_t req, fuse_ino_t, struct stat*, int, fuse_file_info*) {
    fuse_reply_err(req, EROFS);
  }
  static void MkNod(fuse_req_t req, fuse_ino_t, const char*, mode_t, dev_t) {
    fuse_reply_err(req, EROFS);
  }
  static void MkDir(fuse_req_t req, fuse_ino_t, const char*, mode_t) { fuse_reply_err(req, EROFS); }
  static void Remove(fuse_req_t req, fuse_ino_t, const char*) { fuse_reply_err(req, EROFS); }
  static void SymLink(fuse_req_t req, const char*, fuse_ino_t, const char*) {
    fuse_reply_err(req, EROFS);
  }
  static void Rename(fuse_req_t req, fuse_ino_t, const char*, fuse_ino_t, const char*,
                     unsigned int) {
    fuse_reply_err(req, EROFS);
  }
  static void Link(fuse_req_t req, fuse_ino_t, fuse_ino_t, const char*) {
    fuse_reply_err(req, EROFS);
  }
  static void Write(fuse_req_t req, fuse_ino_t, const char*, size_t, off_t, fuse_file_info*) {
    fuse_reply_err(req, EROFS);
  }
  static void SetXattr(fuse_req_t req, fuse_ino_t, const char*, const char*, size_t, int) {
    fuse_reply_err(req, EROFS);
  }
  static void RemoveXattr(fuse_req_t req, fuse_ino_t, const char*) { fuse_reply_err(req, EROFS); }
  static void Create(fuse_req_t req, fuse_ino_t, const char*, mode_t, fuse_file_info*) {
    fuse_reply_err(req, EROFS);
  }
};

MountFs::MountFs(const MountFsOptions& options, MountLink& link, const MountTree& tree)
    : options_(options), link_(link), tree_(tree) {}

const fuse_lowlevel_ops& MountFs::Ops() {
  static const fuse_lowlevel_ops ops = [] {
    fuse_lowlevel_ops o{};
    o.init = Impl::Init;
    o.lookup = Impl::Lookup;
    o.getattr = Impl::GetAttr;
    o.readdir = Impl::ReadDir;
    o.open = Impl::Open;
    o.release = Impl::Release;
    o.read = Impl::Read;
    o.getxattr = Impl::GetXattr;
    o.listxattr = Impl::ListXattr;
    o.statfs = Impl::Statfs;
    o.setattr = Impl::SetAttr;
    o.mknod = Impl::MkNod;
    o.mkdir = Impl::MkDir;
    o.unlink = Impl::Remove;
    o.rmdir = Impl::Remove;
    o.symlink = Impl::SymLink;
    o.rename = Impl::Rename;
    o.link = Impl::Link;
    o.write = Impl::Write;
    o.setxattr = Impl::SetXattr;
    o.removexattr = Impl::RemoveXattr;
    o.create = Impl::Create;
    return o;
  }();
  return ops;
}

Result<std::shared_ptr<ChunkLease>> MountFs::Lease(uint32_t file, uint64_t piece,
                                                   uint64_t last_piece) {
  const Key key{file, piece};
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = by_key_.find(key);
    if (it != by_key_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      return it->second->second;
    }
  }
  auto got = link_.Chunk(file, piece, last_piece);
  if (!got.ok()) return got.status();
  std::vector<std::shared_ptr<ChunkLease>> dropped;  // released outside the lock
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = by_key_.find(key);
    if (it != by_key_.end()) {
      dropped.push_back(std::move(it->second->second));
      it->second->second = *got;
      lru_.splice(lru_.begin(), lru_, it->second);
    } else {
      lru_.emplace_front(key, *got);
      by_key_[key] = lru_.begin();
    }
    while (lru_.size() > std::max<size_t>(1, options_.open_chunks)) {
      by_key_.erase(lru_.back().first);
      dropped.push_back(std::move(lru_.back().second));
      lru_.pop_back();
    }
  }
  return got;
}

}  // namespace shoal
