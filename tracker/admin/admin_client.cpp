#include "admin/admin_client.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <chrono>
#include <cstring>

namespace shoal::tracker {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;

constexpr std::chrono::seconds kTimeout{10};

// The "error" of a {"error":"..."} body, or the body itself.
std::string ErrorMessage(const std::string& body) {
  const std::string key = "{\"error\":\"";
  if (body.rfind(key, 0) != 0) return body.substr(0, 300);
  std::string out;
  for (size_t i = key.size(); i < body.size() && body[i] != '"'; ++i) {
    if (body[i] == '\\' && i + 1 < body.size()) ++i;
    out += body[i];
  }
  return out;
}

Status FromHttp(int status, std::string message) {
  // The tracker words errors as Status::ToString ("permission denied: ..."),
  // and the Status made here adds its own name again.
  for (const char* name : {"invalid argument: ", "unauthenticated: ", "permission denied: ",
                           "not found: ", "unavailable: "}) {
    if (message.rfind(name, 0) == 0) message = message.substr(std::strlen(name));
  }
  switch (status) {
    case 400:
      return Status::InvalidArgument(message);
    case 401:
      return Status::Unauthenticated(message);
    case 403:
      return Status::PermissionDenied(message);
    case 404:
      return Status::NotFound(message);
    case 503:
      return Status::Unavailable(message);
    default:
      return Status::IOError("HTTP " + std::to_string(status) + ": " + message);
  }
}

// Writes `req` on `stream` and reads the answer.
template <class Stream>
http::response<http::string_body> Exchange(Stream& stream,
                                           const http::request<http::empty_body>& req) {
  http::write(stream, req);
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(64 * 1024 * 1024);
  http::read(stream, buffer, parser);
  return parser.release();
}

}  // namespace

Result<std::string> AdminRequest(const std::string& url, const std::string& ca_file,
                                 const std::string& method, const std::string& target,
                                 const std::string& token) {
  const bool tls = url.rfind("https://", 0) == 0;
  if (!tls && url.rfind("http://", 0) != 0) {
    return Status::InvalidArgument("--tracker '" + url +
                                   "' must be the tracker's HTTP address, http(s)://host:port");
  }
  std::string host_port = url.substr(tls ? 8 : 7);
  if (!host_port.empty() && host_port.back() == '/') host_port.pop_back();
  std::string host = host_port, port = tls ? "443" : "80";
  size_t colon = host_port.rfind(':');
  if (colon != std::string::npos && host_port.find(']', colon) == std::string::npos) {
    host = host_port.substr(0, colon);
    port = host_port.substr(colon + 1);
  }
  if (!host.empty() && host.front() == '[') host = host.substr(1, host.size() - 2);
  try {
    asio::io_context io;
    beast::tcp_stream stream(io);
    stream.expires_after(kTimeout);
    asio::ip::tcp::resolver resolver(io);
    stream.connect(resolver.resolve(host, port));
    http::request<http::empty_body> req{http::string_to_verb(method), target, 11};
    req.set(http::field::host, host_port);
    req.set(http::field::authorization, "Bearer " + token);
    req.prepare_payload();
    http::response<http::string_body> res;
    if (tls) {
      asio::ssl::context ctx(asio::ssl::context::tls_client);
      if (ca_file.empty()) {
        ctx.set_default_verify_paths();
      } else {
        ctx.load_verify_file(ca_file);
      }
      ctx.set_verify_mode(asio::ssl::verify_peer);
      beast::ssl_stream<beast::tcp_stream&> secure(stream, ctx);
      secure.set_verify_callback(asio::ssl::host_name_verification(host));
      SSL_set_tlsext_host_name(secure.native_handle(), host.c_str());
      secure.handshake(asio::ssl::stream_base::client);
      res = Exchange(secure, req);
    } else {
      res = Exchange(stream, req);
    }
    beast::error_code ignored;
    stream.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
    const int status = static_cast<int>(res.result_int());
    if (status / 100 == 2) return std::string(res.body());
    return FromHttp(status, ErrorMessage(res.body()));
  } catch (const std::exception& e) {
    return Status::Unavailable("cannot reach the tracker at " + url + ": " + e.what() +
                               "; is it running?");
  }
}

}  // namespace shoal::tracker
