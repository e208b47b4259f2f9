#include "shoal/bencode_writer.h"

namespace shoal {

void BencodeWriter::Int(int64_t v) {
  out_.push_back('i');
  out_ += std::to_string(v);
  out_.push_back('e');
}

void BencodeWriter::Bytes(std::string_view s) {
  out_ += std::to_string(s.size());
  out_.push_back(':');
  out_.append(s.data(), s.size());
}

}  // namespace shoal
