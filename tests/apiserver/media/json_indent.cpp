// json.Indent(dst, src, "", "  ") over compact JSON, which is what json.MarshalIndent
// writes: the apiserver's WriteRawJSON fallback uses it for Status bodies. Strings are
// copied byte for byte, so the HTML-safe escaping of the compact form is kept.
#include "tests/apiserver/media/go_json.h"

namespace testapi {

std::string indentJson(std::string_view compact) {
  std::string out;
  out.reserve(compact.size() * 2);
  int depth = 0;
  auto newline = [&] {
    out += '\n';
    out.append(static_cast<size_t>(depth) * 2, ' ');
  };
  bool in_string = false;
  bool escaped = false;
  for (size_t i = 0; i < compact.size(); ++i) {
    const char c = compact[i];
    if (in_string) {
      out += c;
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    switch (c) {
      case '"':
        in_string = true;
        out += c;
        break;
      case '{':
      case '[':
        out += c;
        // An empty object or array stays "{}" / "[]" on its line.
        if (i + 1 < compact.size() && (compact[i + 1] == '}' || compact[i + 1] == ']')) {
          out += compact[++i];
          break;
        }
        ++depth;
        newline();
        break;
      case '}':
      case ']':
        --depth;
        newline();
        out += c;
        break;
      case ',':
        out += c;
        newline();
        break;
      case ':':
        out += ": ";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace testapi
