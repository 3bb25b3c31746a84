// The HTTP/2 connection's write path below the streams: the OutboundQueue a stream's DATA
// waits in, and the WriteBatch one socket write takes (proxy/http2/write_batch.h).
#include <doctest/doctest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <string_view>
#include <vector>

#include "proxy/http2/outbound_queue.h"
#include "proxy/http2/write_batch.h"

using boost::system::error_code;

TEST_CASE("a gathered write batch sends copied, shared and borrowed pieces in order, from where they lie") {
  int fds[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0);
  proxy::io::WriteBatch batch(false);
  const std::string borrowed = "borrowed;";
  auto shared = watch::makeFrame("shared;");
  batch.copy("header;");
  batch.share(shared, shared->bytes());
  batch.borrow(borrowed);
  batch.copy("tail");
  CHECK(batch.bytes() == 27);
  error_code ec;
  CHECK(batch.sendSome(fds[0], ec) == 27);
  CHECK(batch.empty());
  char got[64] = {};
  CHECK(::read(fds[1], got, sizeof got) == 27);
  CHECK(std::string(got) == "header;shared;borrowed;tail");
  ::close(fds[0]);
  ::close(fds[1]);
}

TEST_CASE("a gathered write batch goes on from where a full send buffer stopped it, arena pieces included") {
  int fds[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0);
  proxy::io::WriteBatch batch(false);
  std::string expected;
  std::vector<std::string> borrowed;
  borrowed.reserve(300);
  for (int i = 0; i < 300; ++i) {  // more pieces than one sendmsg takes, bytes past the buffer
    const std::string header = "h" + std::to_string(i) + ";";
    batch.copy(header);  // the arena grows (and moves) while the batch is built
    borrowed.push_back(std::string(1000 + i, static_cast<char>('a' + i % 26)));
    batch.borrow(borrowed.back());
    expected += header + borrowed.back();
  }
  std::string got;
  char buffer[65536];
  error_code ec;
  while (!batch.empty() && !ec) {
    batch.sendSome(fds[0], ec);
    ssize_t n;
    while ((n = ::recv(fds[1], buffer, sizeof buffer, MSG_DONTWAIT)) > 0) got.append(buffer, static_cast<size_t>(n));
  }
  CHECK_FALSE(ec);
  ssize_t n;
  while ((n = ::recv(fds[1], buffer, sizeof buffer, MSG_DONTWAIT)) > 0) got.append(buffer, static_cast<size_t>(n));
  CHECK(got == expected);
  ::close(fds[0]);
  ::close(fds[1]);
}

TEST_CASE("an outbound queue hands a borrowed span over piece by piece, across takes and empty pieces") {
  const std::vector<std::string_view> pieces = {"", "abc", "", "defgh", "i", ""};
  proxy::io::OutboundQueue queue;
  queue.push(watch::makeFrame("head;"));
  queue.pushBorrowed(pieces, 9);
  CHECK(queue.bytes() == 14);
  proxy::io::WriteBatch batch(true);
  std::string taken;
  for (size_t n : {3u, 4u, 6u, 1u}) {  // ends inside "head;", "abc", "defgh" and at the end
    queue.takeInto(n, batch);
    taken += std::string(batch.contiguous());
    batch.clear();
  }
  CHECK(taken == "head;abcdefghi");
  CHECK(queue.empty());
  CHECK(queue.taken() == 14);
}
