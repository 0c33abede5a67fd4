// Copying between a message and the SGE list of a work request. Addresses are
// this process's memory: the sim's "DMA" is memcpy.
#ifndef VERBSIM_SIM_SG_H_
#define VERBSIM_SIM_SG_H_

#include <cstdint>
#include <vector>

#include "core/types.h"
#include "sim/keys.h"

namespace verbsim::sim {

uint64_t SgeTotal(const std::vector<Sge>& sges);
// Copies `len` bytes at message offset `offset` into the SGEs.
void ScatterTo(const std::vector<Sge>& sges, uint64_t offset,
               const uint8_t* data, uint64_t len);
// Copies the whole message out of the SGEs.
std::vector<uint8_t> GatherFrom(const std::vector<Sge>& sges);
// Copies the first `len` bytes of the message out of the SGEs.
std::vector<uint8_t> GatherPrefix(const std::vector<Sge>& sges, uint64_t len);
// Copies [offset, offset + len) of the message out of the SGEs.
std::vector<uint8_t> GatherRange(const std::vector<Sge>& sges, uint64_t offset,
                                 uint64_t len);
// The local access check over the part [offset, offset + len) of the message
// that falls into each SGE. kOk when every touched SGE passes.
AccessResult CheckSgeRange(const KeyTable& keys, const PdState* pd,
                           const std::vector<Sge>& sges, uint64_t offset,
                           uint64_t len, uint32_t required);

}  // namespace verbsim::sim

#endif  // VERBSIM_SIM_SG_H_
