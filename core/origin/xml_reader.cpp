#include "origin/xml_reader.h"

#include <cstdint>

namespace shoal {
namespace {

constexpr int kMaxDepth = 32;

class Parser {
 public:
  explicit Parser(std::string_view doc) : doc_(doc) {}

  Result<XmlElement> Document() {
    SkipSpace();
    if (Starts("<?xml")) {
      size_t end = doc_.find("?>", pos_);
      if (end == std::string_view::npos) return Fail("unterminated XML declaration");
      pos_ = end + 2;
    }
    SkipMisc();
    XmlElement root;
    Status s = Element(&root, 0);
    if (!s.ok()) return s;
    SkipMisc();
    if (pos_ != doc_.size()) return Fail("content after the root element");
    return root;
  }

 private:
  Status Fail(const std::string& what) const {
    return Status::Corruption("malformed XML from S3 at byte " + std::to_string(pos_) + ": " +
                              what);
  }
  bool Starts(std::string_view s) const { return doc_.substr(pos_, s.size()) == s; }
  void SkipSpace() {
    while (pos_ < doc_.size() &&
           (doc_[pos_] == ' ' || doc_[pos_] == '\n' || doc_[pos_] == '\r' || doc_[pos_] == '\t')) {
      ++pos_;
    }
  }
  // Whitespace and comments between top-level constructs.
  void SkipMisc() {
    for (;;) {
      SkipSpace();
      if (!Starts("<!--")) return;
      size_t end = doc_.find("-->", pos_);
      pos_ = end == std::string_view::npos ? doc_.size() : end + 3;
    }
  }

  Result<std::string> Name() {
    size_t start = pos_;
    while (pos_ < doc_.size()) {
      char c = doc_[pos_];
      if (c == ' ' || c == '>' || c == '/' || c == '\n' || c == '\r' || c == '\t' || c == '=')
        break;
      if (c == '<' || c == '&' || c == '"' || c == '\'') return Fail("bad character in a name");
      ++pos_;
    }
    if (pos_ == start) return Fail("empty name");
    std::string name(doc_.substr(start, pos_ - start));
    size_t colon = name.find(':');
    return colon == std::string::npos ? name : name.substr(colon + 1);
  }

  // Skips attributes up to '>' or '/>'. Sets *empty for '/>'.
  Status Attributes(bool* empty) {
    for (;;) {
      SkipSpace();
      if (pos_ >= doc_.size()) return Fail("unterminated tag");
      if (Starts("/>")) {
        pos_ += 2;
        *empty = true;
        return Status::OK();
      }
      if (doc_[pos_] == '>') {
        ++pos_;
        *empty = false;
        return Status::OK();
      }
      Result<std::string> n = Name();
      if (!n.ok()) return n.status();
      SkipSpace();
      if (pos_ >= doc_.size() || doc_[pos_] != '=') return Fail("attribute without a value");
      ++pos_;
      SkipSpace();
      if (pos_ >= doc_.size() || (doc_[pos_] != '"' && doc_[pos_] != '\'')) {
        return Fail("unquoted attribute value");
      }
      size_t end = doc_.find(doc_[pos_], pos_ + 1);
      if (end == std::string_view::npos) return Fail("unterminated attribute value");
      pos_ = end + 1;
    }
  }

  Status AppendUtf8(uint32_t cp, std::string* out) {
    if (cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
      return Fail("bad character reference");
    }
    if (cp < 0x80) {
      out->push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
    return Status::OK();
  }

  Status Entity(std::string* out) {
    size_t semi = doc_.find(';', pos_);
    if (semi == std::string_view::npos || semi - pos_ > 12) return Fail("unterminated entity");
    std::string_view e = doc_.substr(pos_ + 1, semi - pos_ - 1);
    pos_ = semi + 1;
    if (e == "amp")
      out->push_back('&');
    else if (e == "lt")
      out->push_back('<');
    else if (e == "gt")
      out->push_back('>');
    else if (e == "quot")
      out->push_back('"');
    else if (e == "apos")
      out->push_back('\'');
    else if (e.size() >= 2 && e[0] == '#') {
      bool hex = e[1] == 'x';
      std::string_view digits = e.substr(hex ? 2 : 1);
      if (digits.empty()) return Fail("empty character reference");
      uint32_t cp = 0;
      for (char c : digits) {
        int v = (c >= '0' && c <= '9')        ? c - '0'
                : hex && c >= 'a' && c <= 'f' ? c - 'a' + 10
                : hex && c >= 'A' && c <= 'F' ? c - 'A' + 10
                                              : -1;
        if (v < 0) return Fail("bad character reference");
        cp = cp * (hex ? 16 : 10) + static_cast<uint32_t>(v);
        if (cp > 0x10FFFF) return Fail("bad character reference");
      }
      return AppendUtf8(cp, out);
    } else {
      return Fail("unknown entity &" + std::string(e) + ";");
    }
    return Status::OK();
  }

  Status Element(XmlElement* el, int depth) {
    if (depth > kMaxDepth) return Fail("nesting too deep");
    if (pos_ >= doc_.size() || doc_[pos_] != '<') return Fail("expected an element");
    ++pos_;
    Result<std::string> name = Name();
    if (!name.ok()) return name.status();
    el->name = *name;
    bool empty = false;
    SHOAL_RETURN_IF_ERROR(Attributes(&empty));
    if (empty) return Status::OK();
    for (;;) {
      if (pos_ >= doc_.size()) return Fail("unterminated element <" + el->name + ">");
      char c = doc_[pos_];
      if (c == '&') {
        SHOAL_RETURN_IF_ERROR(Entity(&el->text));
      } else if (c != '<') {
        el->text.push_back(c);
        ++pos_;
      } else if (Starts("</")) {
        pos_ += 2;
        Result<std::string> close = Name();
        if (!close.ok()) return close.status();
        if (*close != el->name) return Fail("</" + *close + "> closes <" + el->name + ">");
        SkipSpace();
        if (pos_ >= doc_.size() || doc_[pos_] != '>') return Fail("unterminated closing tag");
        ++pos_;
        return Status::OK();
      } else if (Starts("<!--")) {
        size_t end = doc_.find("-->", pos_);
        if (end == std::string_view::npos) return Fail("unterminated comment");
        pos_ = end + 3;
      } else if (Starts("<![CDATA[")) {
        size_t end = doc_.find("]]>", pos_);
        if (end == std::string_view::npos) return Fail("unterminated CDATA");
        el->text.append(doc_.substr(pos_ + 9, end - pos_ - 9));
        pos_ = end + 3;
      } else if (Starts("<!") || Starts("<?")) {
        return Fail("declarations and processing instructions are not accepted");
      } else {
        el->children.emplace_back();
        SHOAL_RETURN_IF_ERROR(Element(&el->children.back(), depth + 1));
      }
    }
  }

  std::string_view doc_;
  size_t pos_ = 0;
};

}  // namespace

const XmlElement* XmlElement::Child(std::string_view n) const {
  for (const auto& c : children) {
    if (c.name == n) return &c;
  }
  return nullptr;
}

std::string XmlElement::ChildText(std::string_view n) const {
  const XmlElement* c = Child(n);
  return c ? c->text : std::string();
}

Result<XmlElement> ParseXml(std::string_view doc) { return Parser(doc).Document(); }

}  // namespace shoal
