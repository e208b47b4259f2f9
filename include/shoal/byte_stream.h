// ByteSink and ByteSource: how bytes flow into and out of an Origin without
// the whole object sitting in memory.
//
// An Origin's Get writes into a ByteSink as bytes arrive off the wire, so a
// chunk store can write a chunk file while it downloads. A streaming Put reads
// from a ByteSource, part by part.
//
// Thread-safety: a sink or source is used by one thread at a time. An Origin
// never calls one concurrently with itself.
#ifndef SHOAL_BYTE_STREAM_H_
#define SHOAL_BYTE_STREAM_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "shoal/status.h"

namespace shoal {

class ByteSink {
 public:
  virtual ~ByteSink() = default;
  // Takes the next `len` bytes. A non-OK status stops the transfer, and the
  // Origin returns it to its caller unchanged.
  virtual Status Write(const uint8_t* data, size_t len) = 0;
};

// Appends everything to a string. For small objects and tests.
class StringSink : public ByteSink {
 public:
  Status Write(const uint8_t* data, size_t len) override {
    out_.append(reinterpret_cast<const char*>(data), len);
    return Status::OK();
  }
  const std::string& str() const { return out_; }
  std::string& str() { return out_; }

 private:
  std::string out_;
};

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Reads up to `cap` bytes into `buf`. Returns the count; 0 only at the end.
  virtual Result<size_t> Read(uint8_t* buf, size_t cap) = 0;
};

// Reads until `len` bytes or the end of `source`; returns the count.
Result<size_t> ReadFull(ByteSource& source, uint8_t* buf, size_t len);

// Reads a file from its start. Owns the descriptor.
class FileSource : public ByteSource {
 public:
  // Opens `path` for reading; the status says why it could not.
  static Result<std::unique_ptr<FileSource>> Open(const std::string& path);
  ~FileSource() override;
  FileSource(const FileSource&) = delete;
  FileSource& operator=(const FileSource&) = delete;

  Result<size_t> Read(uint8_t* buf, size_t cap) override;
  uint64_t size() const { return size_; }

 private:
  FileSource(int fd, uint64_t size, std::string path)
      : fd_(fd), size_(size), path_(std::move(path)) {}
  int fd_;
  uint64_t size_;
  std::string path_;
};

}  // namespace shoal

#endif  // SHOAL_BYTE_STREAM_H_
