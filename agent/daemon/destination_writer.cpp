#include "daemon/destination_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <set>

#include "shoal/chunk_span.h"
#include "shoal/file_copy.h"

namespace shoal {

Result<int> CheckReceivedFile(int fd, bool for_write, const std::string& what) {
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    Status s = Status::FromErrno("stat " + what, errno);
    ::close(fd);
    return s;
  }
  int flags = ::fcntl(fd, F_GETFL);
  int acc = flags & O_ACCMODE;
  bool ok_mode =
      for_write ? (acc == O_WRONLY || acc == O_RDWR) : (acc == O_RDONLY || acc == O_RDWR);
  if (!S_ISREG(st.st_mode) || !ok_mode) {
    ::close(fd);
    return Status::PermissionDenied(what + " was not handed over as a regular file open for " +
                                    (for_write ? "writing" : "reading"));
  }
  return fd;
}

DestinationWriter::DestinationWriter(ChunkStore& store, PullDestination& dest, const Manifest& m,
                                     std::string label)
    : store_(store), dest_(dest), manifest_(m), label_(std::move(label)) {}

DestinationWriter::~DestinationWriter() {
  for (auto& [index, fd] : fds_) ::close(fd);
}

Status DestinationWriter::Prepare() {
  // Every folder a file sits in, and the version's empty folders; the
  // caller makes them, parents first.
  std::set<std::string> dirs(manifest_.empty_dirs.begin(), manifest_.empty_dirs.end());
  std::vector<DestFileSpec> files;
  files.reserve(manifest_.files.size());
  for (const FileEntry& f : manifest_.files) {
    files.push_back({f.path, f.size, f.mode});
    for (size_t slash = f.path.find('/'); slash != std::string::npos;
         slash = f.path.find('/', slash + 1)) {
      dirs.insert(f.path.substr(0, slash));
    }
  }
  for (const std::string& d : std::set<std::string>(dirs)) {
    for (size_t slash = d.find('/'); slash != std::string::npos; slash = d.find('/', slash + 1)) {
      dirs.insert(d.substr(0, slash));
    }
  }
  // std::set orders "a" before "a/b": parents come first.
  return dest_.Prepare(std::vector<std::string>(dirs.begin(), dirs.end()), files);
}

Result<int> DestinationWriter::Fd(uint32_t index) {
  auto it = fds_.find(index);
  if (it != fds_.end()) return it->second;
  // One round trip to the caller opens the next files in the manifest's
  // order too, which is the order they are mostly written in: a version of
  // many small files then costs a round trip per batch, not per file.
  std::vector<uint32_t> batch = {index};
  for (uint32_t next = index + 1;
       next < manifest_.files.size() && batch.size() < PullDestination::kMaxOpenBatch &&
       fds_.size() + batch.size() < kMaxOpenFiles;
       ++next) {
    if (manifest_.files[next].size > 0 && fds_.count(next) == 0 && finished_.count(next) == 0)
      batch.push_back(next);
  }
  auto fds = dest_.OpenFiles(batch);
  if (!fds.ok())
    return fds.status().WithContext("open " + manifest_.files[index].path + " in " + label_);
  for (size_t i = 0; i < batch.size(); ++i) fds_[batch[i]] = (*fds)[i];
  return fds_[index];
}

Status DestinationWriter::WritePiece(const std::vector<uint32_t>& file_indexes, uint64_t piece,
                                     const ChunkId& chunk) {
  const FileEntry& first = manifest_.files[file_indexes.front()];
  const uint64_t len = first.ChunkBytes(manifest_.piece_size, piece);
  auto span = store_.OpenSpan(chunk, 0, len);  // pins the chunk while it is copied
  if (!span.ok()) return span.status();
  if (span->length() != len) {
    return Status::Corruption("chunk " + chunk.ShortHex() + " holds " +
                              std::to_string(span->length()) + " bytes; piece " +
                              std::to_string(piece) + " of " + first.path + " needs " +
                              std::to_string(len));
  }
  for (uint32_t index : file_indexes) {
    const std::string target = label_ + "/" + manifest_.files[index].path;
    auto fd = Fd(index);
    if (!fd.ok()) return fd.status();
    Status s = CopyFileRange(span->fd(), span->offset(), *fd,
                             piece * uint64_t{manifest_.piece_size}, len, target);
    if (s.IsNoSpace()) return Status::NoSpace("the destination is full: " + s.message());
    SHOAL_RETURN_IF_ERROR(s);
    bytes_written_ += len;
  }
  return Status::OK();
}

Status DestinationWriter::FinishFiles(const std::vector<uint32_t>& file_indexes) {
  for (uint32_t index : file_indexes) {
    finished_.insert(index);
    auto it = fds_.find(index);
    if (it == fds_.end()) continue;
    int fd = it->second;
    fds_.erase(it);
    const std::string target = label_ + "/" + manifest_.files[index].path;
    if (::fdatasync(fd) != 0) {
      Status s = Status::FromErrno("sync " + target, errno);
      ::close(fd);
      return s;
    }
    if (::close(fd) != 0) return Status::FromErrno("close " + target, errno);
  }
  return Status::OK();
}

Status DestinationWriter::WriteWhole(const std::vector<uint32_t>& file_indexes,
                                     const ChunkId& chunk) {
  const FileEntry& first = manifest_.files[file_indexes.front()];
  std::string data(first.size, '\0');
  auto got = store_.Read(chunk, 0, reinterpret_cast<uint8_t*>(data.data()), data.size());
  if (!got.ok()) return got.status();
  if (*got != data.size()) {
    return Status::Corruption("chunk " + chunk.ShortHex() + " holds " + std::to_string(*got) +
                              " bytes; " + first.path + " needs " + std::to_string(data.size()));
  }
  for (uint32_t index : file_indexes) {
    if (whole_.size() >= PullDestination::kMaxWriteFiles ||
        whole_bytes_ + data.size() > PullDestination::kMaxWriteBytes) {
      SHOAL_RETURN_IF_ERROR(FlushWhole());
    }
    whole_bytes_ += data.size();
    whole_.push_back({index, data});
    finished_.insert(index);
  }
  return Status::OK();
}

Status DestinationWriter::FlushWhole() {
  if (whole_.empty()) return Status::OK();
  Status s = dest_.WriteFiles(whole_);
  if (s.ok()) bytes_written_ += whole_bytes_;
  whole_.clear();
  whole_bytes_ = 0;
  if (s.IsNoSpace()) return Status::NoSpace("the destination is full: " + s.message());
  return s.WithContext("write files to " + label_);
}

}  // namespace shoal
