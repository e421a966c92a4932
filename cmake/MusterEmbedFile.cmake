# Writes a C++ source that defines a function returning a file's bytes as absl::string_view:
#   cmake -DINPUT=<file> -DOUTPUT=<file.cc> -DHEADER=<include path> -DFUNCTION=<qualified name>
#         -P MusterEmbedFile.cmake
# The bytes go in as hex, so the file may hold any character. Used by net/CMakeLists.txt for the
# live page (net/observe/live_page.h).
foreach(var INPUT OUTPUT HEADER FUNCTION)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "MusterEmbedFile.cmake: -D${var}=... is required")
  endif()
endforeach()
file(READ "${INPUT}" hex HEX)
string(LENGTH "${hex}" hex_length)
math(EXPR size "${hex_length} / 2")
# 16 bytes a line: "0x3c,0x21,..."
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REPEAT "0x[0-9a-f][0-9a-f]," 16 line)
string(REGEX REPLACE "(${line})" "\\1\n    " bytes "${bytes}")
string(REGEX REPLACE "^(.*)::([^:]+)$" "\\1" namespace "${FUNCTION}")
string(REGEX REPLACE "^(.*)::([^:]+)$" "\\2" name "${FUNCTION}")
file(WRITE "${OUTPUT}.tmp" "// Generated from ${INPUT} by cmake/MusterEmbedFile.cmake; do not edit.
#include \"${HEADER}\"

namespace ${namespace} {
namespace {
// ${size} bytes and a terminating 0.
constexpr unsigned char kBytes[] = {
    ${bytes}0x00};
}  // namespace

absl::string_view ${name}() {
  return absl::string_view(reinterpret_cast<const char*>(kBytes), sizeof(kBytes) - 1);
}

}  // namespace ${namespace}
")
# Only a changed page touches the output (and so recompiles it).
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
