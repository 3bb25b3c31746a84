#include "tests/apiserver/http/websocket_protocol.h"

#include <openssl/evp.h>
#include <openssl/sha.h>

#include <algorithm>
#include <vector>

#include "tests/apiserver/status/status_util.h"

namespace testapi::websocket {
namespace {

constexpr std::string_view kGuid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
constexpr uint64_t kMaxPayloadBytes = 32u << 20;    // x/net DefaultMaxPayloadBytes
constexpr size_t kMaxControlPayload = 125;          // maxControlFramePayloadLength

std::string lowerAscii(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(::tolower(static_cast<unsigned char>(c)));
  return out;
}

// fmt.Fprintf(buf, "HTTP/1.1 %03d %s\r\n", code, http.StatusText(code)), the extra header
// lines, the blank line, then the error text as the body.
std::string errorAnswer(int code, std::string_view extra_headers, std::string_view body) {
  const char* text = code == 400 ? "Bad Request" : code == 403 ? "Forbidden" : "Method Not Allowed";
  return "HTTP/1.1 " + std::to_string(code) + " " + text + "\r\n" + std::string(extra_headers) + "\r\n" +
         std::string(body);
}

std::string acceptKey(std::string_view key) {
  const std::string input = std::string(key) + std::string(kGuid);
  unsigned char digest[SHA_DIGEST_LENGTH];
  EVP_Digest(input.data(), input.size(), digest, nullptr, EVP_sha1(), nullptr);
  unsigned char b64[4 * ((SHA_DIGEST_LENGTH + 2) / 3) + 1];
  const int n = EVP_EncodeBlock(b64, digest, SHA_DIGEST_LENGTH);
  return std::string(reinterpret_cast<const char*>(b64), static_cast<size_t>(n));
}

bool isHex(char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }

// url.unescape's check: every '%' starts a two-digit hex escape.
bool escapesValid(std::string_view s) {
  for (size_t i = 0; i < s.size(); ++i)
    if (s[i] == '%' && (i + 2 >= s.size() || !isHex(s[i + 1]) || !isHex(s[i + 2]))) return false;
  return true;
}

// parseHost: a ":port" after the last colon (outside an IPv6 literal) is digits only, and
// every ASCII byte is one a host may hold unescaped (shouldEscape in encodeHost mode).
bool hostValid(std::string_view host) {
  const auto bracket = host.rfind(']');
  const auto colon = host.rfind(':');
  if (colon != std::string_view::npos && (bracket == std::string_view::npos || colon > bracket)) {
    auto port = host.substr(colon + 1);
    if (!std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; })) return false;
  }
  constexpr std::string_view allowed = "-._~!$&'()*+,;=:[]<>\"%";
  for (char c : host) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x80 && !std::isalnum(u) && allowed.find(c) == std::string_view::npos) return false;
  }
  return escapesValid(host);
}

// Whether url.ParseRequestURI accepts `s` (websocket.Origin): an absolute URI or an
// absolute path, no control bytes, valid escapes and host. "null" and "example.com" fail.
bool parsesAsRequestUri(std::string_view s) {
  if (s.empty()) return false;
  if (std::any_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }))
    return false;
  if (s == "*") return true;
  size_t i = 0;  // getScheme: letters, then letters, digits, '+', '-', '.' up to ':'
  while (i < s.size() && (std::isalpha(static_cast<unsigned char>(s[i])) ||
                          (i > 0 && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '+' || s[i] == '-' || s[i] == '.'))))
    ++i;
  const bool has_scheme = i < s.size() && s[i] == ':' && i > 0;
  if (i < s.size() && s[i] == ':' && i == 0) return false;  // "missing protocol scheme"
  std::string_view rest = has_scheme ? s.substr(i + 1) : s;
  rest = rest.substr(0, rest.find('?'));
  if (rest.empty() || rest[0] != '/') return has_scheme;  // opaque with a scheme; else "invalid URI for request"
  if (has_scheme && rest.substr(0, 2) == "//") {
    auto authority = rest.substr(2);
    const auto slash = authority.find('/');
    rest = slash == std::string_view::npos ? std::string_view() : authority.substr(slash);
    authority = authority.substr(0, slash);
    const auto at = authority.rfind('@');
    if (!hostValid(at == std::string_view::npos ? authority : authority.substr(at + 1))) return false;
  }
  return escapesValid(rest);
}

}  // namespace

bool isWebSocketRequest(const HttpRequest& req) {
  return lowerAscii(req.firstHeader("upgrade")) == "websocket" &&
         lowerAscii(req.header("connection")).find("upgrade") != std::string::npos;
}

Handshake answerHandshake(const HttpRequest& req) {
  if (req.method != "GET") return {false, errorAnswer(405, "", "bad method")};
  if (lowerAscii(req.firstHeader("upgrade")) != "websocket" ||
      lowerAscii(req.firstHeader("connection")).find("upgrade") == std::string::npos)
    return {false, errorAnswer(400, "", "not websocket protocol")};
  const std::string key = req.firstHeader("sec-websocket-key");
  if (key.empty()) return {false, errorAnswer(400, "", "mismatch challenge/response")};
  if (req.firstHeader("sec-websocket-version") != "13")
    return {false, errorAnswer(400, "Sec-WebSocket-Version: 13\r\n", "missing or bad WebSocket Version")};
  std::vector<std::string_view> protocols;
  const std::string offered(goTrimSpace(req.firstHeader("sec-websocket-protocol")));
  for (size_t pos = 0; !offered.empty() && pos <= offered.size();) {
    const auto comma = std::min(offered.find(',', pos), offered.size());
    protocols.push_back(goTrimSpace(std::string_view(offered).substr(pos, comma - pos)));
    pos = comma + 1;
  }
  // checkOrigin: a missing Origin is a "null origin"; the answer has no body.
  if (!parsesAsRequestUri(req.firstHeader("origin"))) return {false, errorAnswer(403, "", "")};
  if (protocols.size() > 1) return {false, errorAnswer(400, "", "")};
  std::string head = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n";
  head += "Sec-WebSocket-Accept: " + acceptKey(key) + "\r\n";
  if (!protocols.empty()) head += "Sec-WebSocket-Protocol: " + std::string(protocols[0]) + "\r\n";
  head += "\r\n";
  return {true, std::move(head)};
}

std::string frame(Opcode op, std::string_view payload) {
  std::string out;
  out.reserve(payload.size() + 10);
  out += static_cast<char>(0x80 | static_cast<uint8_t>(op));
  const uint64_t n = payload.size();
  if (n <= 125) {
    out += static_cast<char>(n);
  } else if (n < 65536) {
    out += static_cast<char>(126);
    out += static_cast<char>((n >> 8) & 0xff);
    out += static_cast<char>(n & 0xff);
  } else {
    out += static_cast<char>(127);
    for (int shift = 56; shift >= 0; shift -= 8) out += static_cast<char>((n >> shift) & 0xff);
  }
  out += payload;
  return out;
}

std::string closeFrame(uint16_t status) {
  const char payload[2] = {static_cast<char>(status >> 8), static_cast<char>(status & 0xff)};
  return frame(Opcode::Close, std::string_view(payload, 2));
}

bool ClientFrameReader::feed(std::string_view bytes, std::string& reply) {
  while (!ended_ && !bytes.empty()) {
    if (!in_payload_) {
      header_ += bytes[0];
      bytes.remove_prefix(1);
      if (headerComplete(reply) && !ended_ && remaining_ == 0 && opcode_ == static_cast<uint8_t>(Opcode::Ping))
        reply += frame(Opcode::Pong, "");
      continue;
    }
    const auto take = static_cast<size_t>(std::min<uint64_t>(remaining_, bytes.size()));
    if (opcode_ == static_cast<uint8_t>(Opcode::Ping)) {
      for (size_t i = 0; i < take && position_ + i < kMaxControlPayload; ++i)
        ping_payload_ += static_cast<char>(bytes[i] ^ mask_[(position_ + i) % 4]);
    }
    position_ += take;
    remaining_ -= take;
    bytes.remove_prefix(take);
    if (remaining_ == 0) {
      in_payload_ = false;
      if (opcode_ == static_cast<uint8_t>(Opcode::Ping)) reply += frame(Opcode::Pong, ping_payload_);
    }
  }
  return ended_;
}

// Called with each header byte; true once header_ holds a whole header, which it then
// applies (hybiFrameReaderFactory.NewFrameReader, then hybiFrameHandler.HandleFrame).
bool ClientFrameReader::headerComplete(std::string& reply) {
  if (header_.size() < 2) return false;
  const auto b1 = static_cast<unsigned char>(header_[1]);
  const bool masked = (b1 & 0x80) != 0;
  const size_t length_bytes = (b1 & 0x7f) == 126 ? 2 : (b1 & 0x7f) == 127 ? 8 : 0;
  if (header_.size() < 2 + length_bytes + (masked ? 4 : 0)) return false;
  uint64_t length = b1 & 0x7f;
  if (length_bytes > 0) {
    length = 0;
    for (size_t i = 0; i < length_bytes; ++i) {
      auto b = static_cast<unsigned char>(header_[2 + i]);
      if (length_bytes == 8 && i == 0) b &= 0x7f;  // the most significant bit must be 0
      length = length * 256 + b;
    }
  }
  opcode_ = static_cast<unsigned char>(header_[0]) & 0x0f;
  if (masked) std::copy_n(header_.data() + 2 + length_bytes, 4, reinterpret_cast<char*>(mask_));
  header_.clear();
  const bool data = opcode_ != static_cast<uint8_t>(Opcode::Close) && opcode_ != static_cast<uint8_t>(Opcode::Ping) &&
                    opcode_ != static_cast<uint8_t>(Opcode::Pong);
  if (!masked) {
    reply += closeFrame(kCloseProtocolError);
    ended_ = true;
  } else if (opcode_ == static_cast<uint8_t>(Opcode::Close) || (data && length > kMaxPayloadBytes)) {
    ended_ = true;
  }
  in_payload_ = !ended_ && length > 0;
  remaining_ = length;
  position_ = 0;
  ping_payload_.clear();
  return true;
}

}  // namespace testapi::websocket
