// A CAF BASP frame header as a peer would send it: operation at byte 0, payload length
// big-endian at bytes 4-7, operation data (a direct message's id) big-endian at bytes 8-15, the
// rest zero (32 bytes).
#pragma once

#include <cstdint>
#include <string>

namespace muster::testing {

inline std::string BaspHeader(uint8_t operation, uint32_t payload_length,
                              uint64_t operation_data = 0) {
  std::string header(32, '\0');
  header[0] = static_cast<char>(operation);
  for (int i = 0; i < 4; ++i) {
    header[4 + i] = static_cast<char>(payload_length >> (24 - 8 * i));
  }
  for (int i = 0; i < 8; ++i) {
    header[8 + i] = static_cast<char>(operation_data >> (56 - 8 * i));
  }
  return header;
}

}  // namespace muster::testing
