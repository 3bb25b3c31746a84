#pragma once
// Non-blocking calls on a plain TCP socket for the paths that skip the event loop: an
// answer or a watch chunk that fits the socket's send buffer, a list gathered from the
// stored objects, a request that has already arrived. MSG_DONTWAIT makes each call
// non-blocking whatever the socket's own mode. No Asio here.

#include <sys/uio.h>

#include <cstddef>
#include <optional>
#include <span>
#include <string_view>

#include <boost/system/error_code.hpp>

namespace proxy {

// One sendmsg of `iov`: the bytes the kernel took. 0 with `ec` clear when the send
// buffer is full; 0 with `ec` set when the client is gone.
size_t sendSome(int fd, std::span<const iovec> iov, boost::system::error_code& ec);

// Sends what the kernel takes now of `data`: fewer bytes than its size when the send
// buffer filled up. Throws boost::system::system_error when the client is gone.
size_t sendNow(int fd, std::string_view data);

// Reads what has arrived, up to `max` bytes, without waiting: nullopt when nothing has,
// else the bytes read, 0 when the client closed its side, -1 on an error.
std::optional<long> receiveNow(int fd, char* data, size_t max);

}  // namespace proxy
