// Anchors the library so it builds before it has other sources.
namespace proxy {
const char* libraryName() { return "proxy"; }
}  // namespace proxy
