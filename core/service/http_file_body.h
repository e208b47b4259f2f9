// A Beast body type that sends an HttpFileBody with pread(2), one 64 KiB
// piece at a time. Private to shoal_service.
#ifndef SHOAL_SERVICE_HTTP_FILE_BODY_H_
#define SHOAL_SERVICE_HTTP_FILE_BODY_H_

#include <unistd.h>

#include <algorithm>
#include <boost/asio/buffer.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/optional.hpp>
#include <cerrno>
#include <memory>
#include <utility>

#include "shoal/service/http_message.h"

namespace shoal {

struct FileRangeBody {
  using value_type = std::shared_ptr<const HttpFileBody>;

  static std::uint64_t size(const value_type& v) { return v->length(); }

  class writer {
   public:
    using const_buffers_type = boost::asio::const_buffer;

    template <bool isRequest, class Fields>
    writer(const boost::beast::http::header<isRequest, Fields>&, const value_type& v)
        : file_(v), pos_(v->offset()), remaining_(v->length()) {}

    void init(boost::beast::error_code& ec) { ec = {}; }

    boost::optional<std::pair<const_buffers_type, bool>> get(boost::beast::error_code& ec) {
      ec = {};
      if (remaining_ == 0) return boost::none;
      size_t want = size_t(std::min<uint64_t>(remaining_, sizeof(buf_)));
      ssize_t n;
      do {
        n = ::pread(file_->fd(), buf_, want, off_t(pos_));
      } while (n < 0 && errno == EINTR);
      if (n <= 0) {
        // A file that shrank under us cannot honour its Content-Length.
        ec = n < 0 ? boost::beast::error_code(errno, boost::system::system_category())
                   : boost::beast::error_code(EIO, boost::system::system_category());
        return boost::none;
      }
      pos_ += uint64_t(n);
      remaining_ -= uint64_t(n);
      return std::make_pair(const_buffers_type(buf_, size_t(n)), remaining_ > 0);
    }

   private:
    value_type file_;
    uint64_t pos_;
    uint64_t remaining_;
    char buf_[64 * 1024];
  };
};

}  // namespace shoal

#endif  // SHOAL_SERVICE_HTTP_FILE_BODY_H_
