#include "proxy/http/socket_io.h"

#include <cerrno>

#include <boost/system/system_error.hpp>
#include <sys/socket.h>

namespace proxy {

size_t sendSome(int fd, std::span<const iovec> iov, boost::system::error_code& ec) {
  ec = {};
  msghdr message{};
  message.msg_iov = const_cast<iovec*>(iov.data());
  message.msg_iovlen = iov.size();
  ssize_t n;
  do {
    n = ::sendmsg(fd, &message, MSG_DONTWAIT | MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  if (n >= 0) return static_cast<size_t>(n);
  if (errno != EAGAIN && errno != EWOULDBLOCK) ec = boost::system::error_code(errno, boost::system::system_category());
  return 0;
}

size_t sendNow(int fd, std::string_view data) {
  size_t sent = 0;
  while (sent < data.size()) {
    const iovec rest{const_cast<char*>(data.data() + sent), data.size() - sent};
    boost::system::error_code ec;
    const size_t n = sendSome(fd, std::span(&rest, 1), ec);
    if (ec) throw boost::system::system_error(ec);
    if (n == 0) break;  // the send buffer is full
    sent += n;
  }
  return sent;
}

std::optional<long> receiveNow(int fd, char* data, size_t max) {
  ssize_t r;
  do {
    r = ::recv(fd, data, max, MSG_DONTWAIT);
  } while (r < 0 && errno == EINTR);
  if (r < 0) return errno == EAGAIN || errno == EWOULDBLOCK ? std::nullopt : std::optional<long>(-1);
  return r;
}

}  // namespace proxy
