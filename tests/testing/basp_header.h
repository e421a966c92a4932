// A CAF BASP frame header as a peer would send it: operation at byte 0, payload length
// big-endian at bytes 4-7, operation data (a direct message's id) big-endian at bytes 8-15, the
// flags at byte 3 and the receiving actor big-endian at bytes 24-31, the rest zero (32 bytes).
#pragma once

#include <cstdint>
#include <string>

namespace muster::testing {

inline std::string BaspHeader(uint8_t operation, uint32_t payload_length,
                              uint64_t operation_data = 0, uint8_t flags = 0,
                              uint64_t receiver = 0) {
  std::string header(32, '\0');
  header[0] = static_cast<char>(operation);
  for (int i = 0; i < 4; ++i) {
    header[4 + i] = static_cast<char>(payload_length >> (24 - 8 * i));
  }
  header[3] = static_cast<char>(flags);
  for (int i = 0; i < 8; ++i) {
    header[8 + i] = static_cast<char>(operation_data >> (56 - 8 * i));
    header[24 + i] = static_cast<char>(receiver >> (56 - 8 * i));
  }
  return header;
}

}  // namespace muster::testing
