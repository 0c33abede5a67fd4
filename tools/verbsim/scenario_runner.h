// The runner of a checked scenario: the objects it created, by name, and
// what the run recorded. One method per command:
//   scenario_run.cc     the command loop, virtual time (run, wait, poll),
//                       the timeline and the sim's trace
//   scenario_setup.cc   endpoints, MRs, AHs, windows, connect and modify
//   scenario_post.cc    work requests (post, bind)
//   scenario_expect.cc  expectations
#ifndef VERBSIM_TOOLS_VERBSIM_SCENARIO_RUNNER_H_
#define VERBSIM_TOOLS_VERBSIM_SCENARIO_RUNNER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/endpoint.h"
#include "core/provider.h"
#include "sim/sim_provider.h"
#include "tools/verbsim/scenario.h"

namespace verbsim::cli::scenario_internal {

struct EpState {
  std::unique_ptr<Endpoint> ep;
  EndpointAttr attr;
  int node = 0;
};

struct MwState {
  std::unique_ptr<Mw> mw;
  int type = 1;
};

struct MrState {
  std::vector<uint64_t> words;  // 8-byte aligned storage
  uint64_t size = 0;
  std::unique_ptr<Mr> mr;
  std::string ep;
  uint8_t* data() { return reinterpret_cast<uint8_t*>(words.data()); }
};

absl::string_view TransportName(QpType t);

class Runner {
 public:
  Runner(const Scenario& sc, const RunOptions& opt) : sc_(sc), opt_(opt) {}
  ~Runner();

  absl::StatusOr<RunResult> Run();

 private:
  // scenario_run.cc
  absl::Status OpenProvider();
  absl::Status Execute(const Command& c);
  absl::Status Say(const Command& c);
  absl::Status Nodes(const Command& c);
  absl::Status RunFabric(const Command& c);
  absl::Status WaitOrPoll(const Command& c);
  sim::Fabric& fabric() { return sim_->fabric(); }
  int64_t Now();
  void Row(TimelineRow::Kind kind, int node, uint32_t qpn, std::string text,
           int64_t time = -2);
  void EpRow(const EpState& e, std::string text,
             TimelineRow::Kind kind = TimelineRow::kAction);
  // A command that cannot be carried out: the run stops.
  absl::Status Fail(int line, absl::string_view msg);
  // A verb that failed: the next command is to be `expect error`, else the
  // run stops there.
  absl::Status Defer(int line, absl::Status s);
  void FlushTrace();
  QpType TransportOf(int node, uint32_t qpn) const;
  void MatchCompletions();

  // scenario_setup.cc
  absl::Status Faults(const Command& c);
  absl::Status CreateEndpoint(const Command& c);
  absl::Status RegisterMr(const Command& c);
  absl::Status CreateAh(const Command& c);
  absl::Status AllocMw(const Command& c);
  absl::Status Fill(const Command& c);
  absl::Status Connect(const Command& c);
  absl::Status ModifyQp(const Command& c);
  absl::Status Modify(int line, EpState& e, QpState to, EpState* peer);
  // The device of node `node`: simN, or one of a provider's devices.
  std::string DeviceName(int node) const;
  // rkey=/inv=/inv_rkey= values: a window's current rkey, or a number.
  uint32_t Rkey(const std::string& v);
  // dest=/src_qp= values: an endpoint's QP number, or a number.
  uint32_t Qpn(const std::string& v);

  // scenario_post.cc
  absl::Status Post(const Command& c);
  absl::Status Bind(const Command& c);
  SendWr SendWrOf(const Command& c, const EpState& e, const Sge& sge);
  std::string SendText(const Command& c, const SendWr& wr, uint64_t len);
  // A work request about to be posted.
  PostedWr NewWr(const EpState& e, uint64_t wr_id);
  // The row of a post, and the work request if the post went through.
  absl::Status Posted(const Command& c, const EpState& e, const absl::Status& s,
                      const std::string& text, const PostedWr& wr);

  // scenario_expect.cc
  absl::Status Expect(const Command& c);
  void ExpectCompletion(const Command& c, const std::string& desc);
  void ExpectGrh(const Command& c, const std::string& desc, const uint8_t* g);
  void Check(const Command& c, bool ok, const std::string& what,
             const std::string& got);

  const Scenario& sc_;
  const RunOptions& opt_;
  std::unique_ptr<Provider> provider_;
  sim::SimProvider* sim_ = nullptr;
  std::vector<std::string> devices_;
  std::map<std::string, EpState> eps_;
  std::map<std::string, MrState> mrs_;
  std::map<std::string, std::unique_ptr<Ah>> ahs_;
  std::map<std::string, MwState> mws_;
  std::optional<WorkCompletion> last_wc_;
  std::optional<absl::Status> pending_error_;
  int pending_line_ = 0;
  size_t trace_seen_ = 0;
  RunResult result_;
};

}  // namespace verbsim::cli::scenario_internal

#endif  // VERBSIM_TOOLS_VERBSIM_SCENARIO_RUNNER_H_
