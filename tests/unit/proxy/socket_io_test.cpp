#include "proxy/socket_io.h"

#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include <boost/system/system_error.hpp>

namespace {

// A connected pair of non-blocking stream sockets, closed at the end of the test.
struct SocketPair {
  int fd[2] = {-1, -1};
  SocketPair() {
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, fd) == 0);
    for (int f : fd) REQUIRE(::fcntl(f, F_SETFL, ::fcntl(f, F_GETFL) | O_NONBLOCK) == 0);
  }
  ~SocketPair() {
    for (int f : fd) {
      if (f >= 0) ::close(f);
    }
  }
};

}  // namespace

TEST_CASE("sendNow sends what fits and stops at a full send buffer; the rest is the caller's") {
  SocketPair pair;
  const std::string small = "HTTP/1.1 200 OK\r\n\r\n";
  CHECK(proxy::sendNow(pair.fd[0], small.data(), small.size()) == small.size());
  const std::string big(16 << 20, 'x');  // more than any socket buffer
  const size_t sent = proxy::sendNow(pair.fd[0], big.data(), big.size());
  CHECK(sent > 0);
  CHECK(sent < big.size());
  CHECK(proxy::sendNow(pair.fd[0], big.data(), big.size()) == 0);  // still full: no wait, no error
}

TEST_CASE("sendNow throws once the client is gone") {
  SocketPair pair;
  ::close(pair.fd[1]);
  pair.fd[1] = -1;
  const std::string answer = "HTTP/1.1 200 OK\r\n\r\n";
  CHECK_THROWS_AS(proxy::sendNow(pair.fd[0], answer.data(), answer.size()), boost::system::system_error);
}

TEST_CASE("receiveNow tells nothing-yet, bytes, and a closed side apart") {
  SocketPair pair;
  char buf[64];
  CHECK_FALSE(proxy::receiveNow(pair.fd[0], buf, sizeof buf).has_value());
  const std::string head = "GET /api HTTP/1.1\r\n\r\n";
  REQUIRE(::send(pair.fd[1], head.data(), head.size(), 0) == static_cast<ssize_t>(head.size()));
  const auto n = proxy::receiveNow(pair.fd[0], buf, sizeof buf);
  REQUIRE(n.has_value());
  CHECK(std::string(buf, static_cast<size_t>(*n)) == head);
  ::shutdown(pair.fd[1], SHUT_WR);
  CHECK(proxy::receiveNow(pair.fd[0], buf, sizeof buf) == std::optional<long>(0));
}
