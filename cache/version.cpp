// Anchors the library so it builds before it has other sources.
namespace cache {
const char* libraryName() { return "cache"; }
}  // namespace cache
