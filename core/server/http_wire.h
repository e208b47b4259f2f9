// What an HTTP session reads from and writes to the wire, field by field: a
// Beast request into an HttpRequest, its target into a path and query
// parameters, and which response headers are safe to write. Private to
// shoal_server.
#ifndef SHOAL_SERVER_HTTP_WIRE_H_
#define SHOAL_SERVER_HTTP_WIRE_H_

#include <boost/beast/http.hpp>
#include <string>
#include <string_view>

#include "shoal/server/http_message.h"

namespace shoal {

// The request as handlers see it, from `remote` ("ip:port" or "unix"); the
// body is moved out of `msg`. The path and query are not parsed yet.
HttpRequest RequestFrom(boost::beast::http::request<boost::beast::http::string_body>& msg,
                        const std::string& remote);

// A header name is an RFC 7230 token; a value has no CR, LF or NUL.
bool IsHeaderSafe(std::string_view name, std::string_view value);

}  // namespace shoal

#endif  // SHOAL_SERVER_HTTP_WIRE_H_
