// What a device says about itself: every field of ibv_query_device and
// ibv_query_port the API carries, and what ibv_create_cq, ibv_create_qp and
// ibv_create_srq grant for a spread of requests, with what ibv_query_qp and
// ibv_query_srq say afterwards. Each case notes the figures (NoteValue), so
// docs/fidelity.md compares sim:rxe with hw:rxe0 and sim:siw with hw:siw0
// field by field. Figures that depend on the host, not on the kind of
// device (the device name, the netdev's MTU), are not noted.
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "core/types.h"
#include "core/verbs.h"
#include "gtest/gtest.h"
#include "tests/fixture.h"
#include "tests/matchers.h"
#include "tests/observed.h"

namespace verbsim {
namespace testing {
namespace {

struct Field {
  std::string name;
  std::function<long long(const DeviceAttr&, const PortAttr&)> get;
};
void PrintTo(const Field& f, std::ostream* os) { *os << f.name; }

std::vector<Field> Fields() {
  using D = DeviceAttr;
  using P = PortAttr;
  std::vector<Field> f = {
      {"node_type", [](const D& d, const P&) { return d.node_type; }},
      {"max_mr_size",
       [](const D& d, const P&) { return static_cast<long long>(d.max_mr_size); }},
      {"page_size_cap",
       [](const D& d, const P&) { return static_cast<long long>(d.page_size_cap); }},
      {"vendor_id", [](const D& d, const P&) { return d.vendor_id; }},
      {"vendor_part_id", [](const D& d, const P&) { return d.vendor_part_id; }},
      {"max_qp", [](const D& d, const P&) { return d.max_qp; }},
      {"max_qp_wr", [](const D& d, const P&) { return d.max_qp_wr; }},
      {"device_cap_flags", [](const D& d, const P&) { return d.device_cap_flags; }},
      {"max_sge", [](const D& d, const P&) { return d.max_sge; }},
      {"max_sge_rd", [](const D& d, const P&) { return d.max_sge_rd; }},
      {"max_cq", [](const D& d, const P&) { return d.max_cq; }},
      {"max_cqe", [](const D& d, const P&) { return d.max_cqe; }},
      {"max_mr", [](const D& d, const P&) { return d.max_mr; }},
      {"max_pd", [](const D& d, const P&) { return d.max_pd; }},
      {"max_qp_rd_atom", [](const D& d, const P&) { return d.max_qp_rd_atom; }},
      {"max_qp_init_rd_atom",
       [](const D& d, const P&) { return d.max_qp_init_rd_atom; }},
      {"max_res_rd_atom",
       [](const D& d, const P&) { return static_cast<long long>(d.max_res_rd_atom); }},
      {"max_inline_data", [](const D& d, const P&) { return d.max_inline_data; }},
      {"max_mw", [](const D& d, const P&) { return d.max_mw; }},
      {"max_ah", [](const D& d, const P&) { return d.max_ah; }},
      {"max_srq", [](const D& d, const P&) { return d.max_srq; }},
      {"max_srq_wr", [](const D& d, const P&) { return d.max_srq_wr; }},
      {"max_srq_sge", [](const D& d, const P&) { return d.max_srq_sge; }},
      {"max_pkeys", [](const D& d, const P&) { return d.max_pkeys; }},
      {"atomic_cap",
       [](const D& d, const P&) { return static_cast<long long>(d.atomic_cap); }},
      {"phys_port_cnt", [](const D& d, const P&) { return d.phys_port_cnt; }},
      {"max_mcast_grp", [](const D& d, const P&) { return d.max_mcast_grp; }},
      {"max_mcast_qp_attach",
       [](const D& d, const P&) { return d.max_mcast_qp_attach; }},
      {"max_total_mcast_qp_attach",
       [](const D& d, const P&) { return d.max_total_mcast_qp_attach; }},
      {"local_ca_ack_delay",
       [](const D& d, const P&) { return d.local_ca_ack_delay; }},
      {"port_state", [](const D&, const P& p) { return p.state; }},
      {"port_max_mtu",
       [](const D&, const P& p) { return static_cast<long long>(p.max_mtu); }},
      {"port_gid_tbl_len", [](const D&, const P& p) { return p.gid_tbl_len; }},
      {"port_pkey_tbl_len", [](const D&, const P& p) { return p.pkey_tbl_len; }},
      {"port_link_layer", [](const D&, const P& p) { return p.link_layer; }},
      {"port_cap_flags", [](const D&, const P& p) { return p.port_cap_flags; }},
      {"port_max_msg_sz",
       [](const D&, const P& p) { return static_cast<long long>(p.max_msg_sz); }},
      {"port_max_vl_num", [](const D&, const P& p) { return p.max_vl_num; }},
  };
  return f;
}

class AttributeTest : public ProviderTestWithParam<Field> {};

TEST_P(AttributeTest, IsWhatTheDeviceReports) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Context> context, OpenDevice());
  ASSERT_OK_AND_ASSIGN(PortAttr port, context->QueryPort(1));
  NoteValue(param().name, param().get(context->device_attr(), port));
}

INSTANTIATE_PROVIDER_TEST_SUITE_WITH_P(AttributeTest,
                                       ::testing::ValuesIn(Fields()));

// ibv_create_cq(3): at least the entries asked for.
class CqCapacityTest : public ProviderTestWithParam<int> {};

TEST_P(CqCapacityTest, HoldsAtLeastWhatWasAsked) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Context> context, OpenDevice());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Cq> cq, context->CreateCq(param(), nullptr));
  EXPECT_GE(cq->cqe(), param());
  NoteValue("cqe", cq->cqe());
}

INSTANTIATE_PROVIDER_TEST_SUITE_WITH_P(CqCapacityTest,
                                       ::testing::Values(1, 2, 3, 4, 7, 8,
                                                         100, 1000));

struct CapCase {
  std::string name;
  QpCap cap;
};
void PrintTo(const CapCase& c, std::ostream* os) { *os << c.name; }

void NoteCap(const std::string& prefix, const QpCap& c) {
  NoteValue(prefix + "_send_wr", c.max_send_wr);
  NoteValue(prefix + "_recv_wr", c.max_recv_wr);
  NoteValue(prefix + "_send_sge", c.max_send_sge);
  NoteValue(prefix + "_recv_sge", c.max_recv_sge);
  NoteValue(prefix + "_inline", c.max_inline_data);
}

// ibv_create_qp(3) writes back what it granted; ibv_query_qp(3) then says
// what the queues hold. Both are at least the request.
class QpCapacityTest : public ProviderTestWithParam<CapCase> {};

TEST_P(QpCapacityTest, HoldsAtLeastWhatWasAsked) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Context> context, OpenDevice());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Pd> pd, context->AllocPd());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Cq> cq, context->CreateCq(64, nullptr));
  QpInitAttr init;
  init.send_cq = cq.get();
  init.recv_cq = cq.get();
  init.qp_type = QpType::kRc;
  init.cap = param().cap;
  const QpCap& asked = param().cap;
  if (asked.max_inline_data >
      static_cast<uint32_t>(context->device_attr().max_inline_data)) {
    EXPECT_THAT(pd->CreateQp(init), HasErrno(EINVAL));
    return;
  }
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Qp> qp, pd->CreateQp(init));
  const QpCap created = qp->init_attr().cap;
  ASSERT_OK_AND_ASSIGN(QpAttr queried, qp->Query());
  for (const QpCap& c : {created, queried.cap}) {
    EXPECT_GE(c.max_send_wr, asked.max_send_wr);
    EXPECT_GE(c.max_recv_wr, asked.max_recv_wr);
    EXPECT_GE(c.max_send_sge, asked.max_send_sge);
    EXPECT_GE(c.max_recv_sge, asked.max_recv_sge);
    EXPECT_GE(c.max_inline_data, asked.max_inline_data);
  }
  NoteCap("created", created);
  NoteCap("queried", queried.cap);
}

INSTANTIATE_PROVIDER_TEST_SUITE_WITH_P(
    QpCapacityTest,
    ::testing::Values(CapCase{"Wr1Sge1", {1, 1, 1, 1, 0}},
                      CapCase{"Wr4Sge1", {4, 4, 1, 1, 0}},
                      CapCase{"Wr5Sge3", {5, 5, 3, 3, 0}},
                      CapCase{"Wr5Sge5", {5, 5, 5, 5, 0}},
                      CapCase{"Wr16Sge2Inline16", {16, 16, 2, 2, 16}},
                      CapCase{"Wr100Inline64", {100, 100, 1, 1, 64}},
                      CapCase{"Inline100", {1, 1, 1, 1, 100}},
                      CapCase{"Inline256", {1, 1, 1, 1, 256}}));

// ibv_create_srq(3) and ibv_query_srq(3).
class SrqCapacityTest : public ProviderTestWithParam<int> {};

TEST_P(SrqCapacityTest, HoldsAtLeastWhatWasAsked) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Context> context, OpenDevice());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Pd> pd, context->AllocPd());
  SrqAttr asked;
  asked.max_wr = static_cast<uint32_t>(param());
  asked.max_sge = 1;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Srq> srq, pd->CreateSrq(asked));
  absl::StatusOr<SrqAttr> queried = srq->Query();
  if (!expect().queries_srq) {
    EXPECT_THAT(queried, HasErrno(EOPNOTSUPP));
    return;
  }
  ASSERT_OK(queried);
  EXPECT_GE(queried->max_wr, asked.max_wr);
  EXPECT_GE(queried->max_sge, asked.max_sge);
  NoteValue("queried_max_wr", queried->max_wr);
  NoteValue("queried_max_sge", queried->max_sge);
}

INSTANTIATE_PROVIDER_TEST_SUITE_WITH_P(SrqCapacityTest,
                                       ::testing::Values(1, 3, 100, 1000));

}  // namespace
}  // namespace testing
}  // namespace verbsim
