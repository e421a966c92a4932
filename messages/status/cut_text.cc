#include "muster/messages/status/cut_text.h"

#include <absl/strings/str_cat.h>

namespace muster {

std::string CutText(absl::string_view text, size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  size_t end = max_bytes;
  // Back over continuation bytes (10xxxxxx) to the start of the character they belong to: at
  // most three (text that is not UTF-8 is cut where the bound says).
  for (int back = 0; back < 3 && end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80;
       ++back) {
    --end;
  }
  if ((static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) end = max_bytes;
  return absl::StrCat(text.substr(0, end), " [cut: ", text.size() - end, " more bytes]");
}

}  // namespace muster
