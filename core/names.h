// Readable names for every verbsim enum, and stream operators so GoogleTest
// prints them by name.
#ifndef VERBSIM_CORE_NAMES_H_
#define VERBSIM_CORE_NAMES_H_

#include <ostream>
#include <string>

#include "absl/strings/string_view.h"
#include "core/types.h"

namespace verbsim {

// "SUCCESS", "REM_ACCESS_ERR", ...: the ibv_wc_status name without IBV_WC_.
absl::string_view WcStatusName(WcStatus status);
// The description ibv_wc_status_str(3) style: "remote access error".
absl::string_view WcStatusDescription(WcStatus status);
absl::string_view WcOpcodeName(WcOpcode opcode);
absl::string_view WrOpcodeName(WrOpcode opcode);
absl::string_view QpStateName(QpState state);
absl::string_view QpTypeName(QpType type);
absl::string_view AsyncEventTypeName(AsyncEventType type);
// "LOCAL_WRITE|REMOTE_READ", or "0".
std::string AccessFlagsName(uint32_t access);
// "STATE|AV|PATH_MTU", or "0".
std::string QpAttrMaskName(uint32_t mask);

std::ostream& operator<<(std::ostream& os, WcStatus v);
std::ostream& operator<<(std::ostream& os, WcOpcode v);
std::ostream& operator<<(std::ostream& os, WrOpcode v);
std::ostream& operator<<(std::ostream& os, QpState v);
std::ostream& operator<<(std::ostream& os, QpType v);
std::ostream& operator<<(std::ostream& os, MwType v);
std::ostream& operator<<(std::ostream& os, AsyncEventType v);
std::ostream& operator<<(std::ostream& os, const WorkCompletion& wc);

}  // namespace verbsim

#endif  // VERBSIM_CORE_NAMES_H_
