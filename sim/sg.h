// Copying between a message and the SGE list of a work request. Addresses are
// this process's memory: the sim's "DMA" is memcpy.
#ifndef VERBSIM_SIM_SG_H_
#define VERBSIM_SIM_SG_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "core/types.h"
#include "sim/keys.h"
#include "sim/payload.h"

namespace verbsim::sim {

uint64_t SgeTotal(absl::Span<const Sge> sges);
// Copies `len` bytes at message offset `offset` into the SGEs.
void ScatterTo(absl::Span<const Sge> sges, uint64_t offset,
               const uint8_t* data, uint64_t len);
// Copies the whole message out of the SGEs (a small one stays inside the
// Payload: no allocation).
Payload GatherFrom(absl::Span<const Sge> sges);
// Copies the first `len` bytes of the message out of the SGEs, or all of
// it if shorter.
Payload GatherPrefix(absl::Span<const Sge> sges, uint64_t len);
// Copies [offset, offset + len) of the message out of the SGEs into `out`,
// which has room for `len` bytes.
void GatherRange(absl::Span<const Sge> sges, uint64_t offset, uint64_t len,
                 uint8_t* out);
// The local access check over the part [offset, offset + len) of the message
// that falls into each SGE. kOk when every touched SGE passes. `passed`, when
// given, receives how many bytes from `offset` lie in the pieces that passed
// before the first that failed (all `len` on kOk): what a device that copies
// SGE by SGE has placed when the check fails.
AccessResult CheckSgeRange(const KeyTable& keys, const PdState* pd,
                           absl::Span<const Sge> sges, uint64_t offset,
                           uint64_t len, uint32_t required,
                           uint64_t* passed = nullptr);

}  // namespace verbsim::sim

#endif  // VERBSIM_SIM_SG_H_
