#include "proxy/server/heap_scavenger.h"

#include <malloc.h>

namespace proxy::io {

void HeapScavenger::connectionEnded() {
  if (++ended_ < kEndedConnections || scheduled_) return;
  scheduled_ = true;
  timer_.expires_after(kSettle);
  timer_.async_wait([this](const error_code& ec) {
    scheduled_ = false;
    if (ec) return;
    ended_ = 0;
    malloc_trim(0);
  });
}

}  // namespace proxy::io
