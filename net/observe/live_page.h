// The live page of `muster serve --http` (net/observe/page/index.html): one self-contained HTML
// file carried in the library. The build generates its definition from the page
// (net/CMakeLists.txt, cmake/MusterEmbedFile.cmake), again whenever the page changes.
#pragma once

#include <absl/strings/string_view.h>

namespace muster {

// The page's UTF-8 bytes, served at GET / as text/html; charset=utf-8.
absl::string_view LivePageHtml();

}  // namespace muster
