// CRC-32 as RoCEv2's ICRC uses it: the reflected polynomial 0xedb88320
// (IEEE 802.3), the register passed in and out without the final
// inversion so that one CRC can run over several pieces (sim/wire.cc
// chains the masked pseudo header and the packet).
#ifndef VERBSIM_SIM_CRC32_H_
#define VERBSIM_SIM_CRC32_H_

#include <cstddef>
#include <cstdint>

namespace verbsim::sim {

// The register after `n` more bytes at `p`: on x86-64 with PCLMULQDQ, 64
// bytes and more fold with carry-less multiplication; otherwise, and for
// the rest, eight bytes a step through eight tables ("slicing by 8"). The
// same result as one bit a step.
uint32_t Crc32Update(uint32_t reg, const uint8_t* p, size_t n);

}  // namespace verbsim::sim

#endif  // VERBSIM_SIM_CRC32_H_
