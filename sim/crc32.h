// CRC-32 as RoCEv2's ICRC uses it: the reflected polynomial 0xedb88320
// (IEEE 802.3), the register passed in and out without the final
// inversion so that one CRC can run over several pieces (sim/wire.cc
// chains the masked pseudo header and the packet).
#ifndef VERBSIM_SIM_CRC32_H_
#define VERBSIM_SIM_CRC32_H_

#include <cstddef>
#include <cstdint>

namespace verbsim::sim {

// The register after `n` more bytes at `p`: on x86-64 with VPCLMULQDQ and
// AVX-512, 256 bytes and more fold 64 bytes an instruction; with
// VPCLMULQDQ and AVX2 only, 128 bytes and more fold 32 bytes an
// instruction; with PCLMULQDQ, 64 bytes and more fold 16 bytes an
// instruction; otherwise,
// and for the rest, eight bytes a step through eight tables ("slicing by
// 8"). The same result as one bit a step.
uint32_t Crc32Update(uint32_t reg, const uint8_t* p, size_t n);

// Each way on its own, for tests and benchmarks that compare them; a way
// the processor lacks is not to be called (Has* say which it has).
namespace crc32_internal {
uint32_t SlicedUpdate(uint32_t reg, const uint8_t* p, size_t n);
bool HasClmul();
bool HasYmmClmul();
bool HasWideClmul();
// n >= 64; only when HasClmul().
uint32_t FoldedUpdate(uint32_t reg, const uint8_t* p, size_t n);
// n >= 128; only when HasYmmClmul().
uint32_t YmmFoldedUpdate(uint32_t reg, const uint8_t* p, size_t n);
// n >= 256; only when HasWideClmul().
uint32_t WideFoldedUpdate(uint32_t reg, const uint8_t* p, size_t n);
}  // namespace crc32_internal

}  // namespace verbsim::sim

#endif  // VERBSIM_SIM_CRC32_H_
