// Incarnation ids: random, non-zero 64-bit numbers that tell one run of a process from the next.
#pragma once

#include <cstdint>
#include <random>

namespace muster {

inline uint64_t NewIncarnation() {
  std::random_device device;
  std::mt19937_64 engine((uint64_t{device()} << 32) ^ device());
  uint64_t id = 0;
  while (id == 0) id = engine();
  return id;
}

}  // namespace muster
