// Anchors the library so it builds before it has other sources.
namespace config {
const char* libraryName() { return "config"; }
}  // namespace config
