#include "muster/messages/status/cut_text.h"

#include <absl/strings/str_cat.h>

namespace muster {

std::string CutText(absl::string_view text, size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  size_t end = max_bytes;
  // Back over continuation bytes (10xxxxxx) to the start of the character they belong to.
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return absl::StrCat(text.substr(0, end), " [cut: ", text.size() - end, " more bytes]");
}

}  // namespace muster
