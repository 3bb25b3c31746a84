#include "watch/watch_dispatcher.h"

namespace watch {

WatchDispatcher::WatchDispatcher(const cache::ThreadSafeStore& store) : store_(store) {}
WatchDispatcher::~WatchDispatcher() = default;

void WatchDispatcher::onEvents(std::span<const cache::WatchEvent> events) { (void)events; }
void WatchDispatcher::onBookmark(uint64_t rv) { (void)rv; }

}  // namespace watch
