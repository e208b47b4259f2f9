// BencodeWriter: appends bencoded values to a string. The caller writes
// dictionary keys in sorted order; nothing here reorders them.
#ifndef SHOAL_BENCODE_WRITER_H_
#define SHOAL_BENCODE_WRITER_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace shoal {

class BencodeWriter {
 public:
  void Int(int64_t v);
  void Bytes(std::string_view s);
  void BeginDict() { out_.push_back('d'); }
  void BeginList() { out_.push_back('l'); }
  void End() { out_.push_back('e'); }

  const std::string& str() const { return out_; }
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

}  // namespace shoal

#endif  // SHOAL_BENCODE_WRITER_H_
