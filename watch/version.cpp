// Anchors the library so it builds before it has other sources.
namespace watch {
const char* libraryName() { return "watch"; }
}  // namespace watch
