#include "proxy/http/socket_io.h"

#include <doctest/doctest.h>

#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include <boost/system/system_error.hpp>

namespace {

// A connected pair of stream sockets, closed at the end of the test. Left blocking:
// MSG_DONTWAIT alone must keep the calls from waiting, whatever mode a socket is in.
struct SocketPair {
  int fd[2] = {-1, -1};
  SocketPair() { REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, fd) == 0); }
  ~SocketPair() {
    for (int f : fd) {
      if (f >= 0) ::close(f);
    }
  }
};

}  // namespace

TEST_CASE("sendNow and sendSome send what fits and stop at a full send buffer; the rest is the caller's") {
  SocketPair pair;
  const std::string small = "HTTP/1.1 200 OK\r\n\r\n";
  CHECK(proxy::sendNow(pair.fd[0], small) == small.size());
  const std::string big(16 << 20, 'x');  // more than any socket buffer
  const size_t sent = proxy::sendNow(pair.fd[0], big);
  CHECK(sent > 0);
  CHECK(sent < big.size());
  CHECK(proxy::sendNow(pair.fd[0], big) == 0);  // still full: no wait, no error
  // One gathered sendmsg says the same: nothing taken, no error.
  iovec pieces[2] = {{const_cast<char*>(small.data()), small.size()}, {const_cast<char*>(big.data()), big.size()}};
  boost::system::error_code ec;
  CHECK(proxy::sendSome(pair.fd[0], pieces, ec) == 0);
  CHECK_FALSE(ec);
}

TEST_CASE("sendNow throws and sendSome sets the error once the client is gone") {
  SocketPair pair;
  ::close(pair.fd[1]);
  pair.fd[1] = -1;
  const std::string answer = "HTTP/1.1 200 OK\r\n\r\n";
  CHECK_THROWS_AS(proxy::sendNow(pair.fd[0], answer), boost::system::system_error);
  iovec piece{const_cast<char*>(answer.data()), answer.size()};
  boost::system::error_code ec;
  CHECK(proxy::sendSome(pair.fd[0], std::span(&piece, 1), ec) == 0);
  CHECK(ec == boost::system::errc::broken_pipe);
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
