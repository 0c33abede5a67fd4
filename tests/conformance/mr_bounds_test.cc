// MR bounds, off by one at both ends: remote accesses through an rkey and
// local SGEs through an lkey.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

#include "core/names.h"
#include "core/types.h"
#include "core/verbs.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/fixture.h"
#include "tests/matchers.h"

namespace verbsim {
namespace testing {
namespace {

using ::testing::IsEmpty;

// The MR under test covers [kMrOffset, kMrOffset + kMrLength) of a larger
// buffer, so that one byte either side is real memory.
constexpr size_t kBufferSize = 8192;
constexpr size_t kMrOffset = 1024;
constexpr int64_t kMrLength = 2048;

struct Range {
  const char* name;
  int64_t offset;  // relative to the MR's start; may be negative
  int64_t length;
  bool inside;
};
void PrintTo(const Range& r, std::ostream* os) { *os << r.name; }

const Range kRanges[] = {
    {"FirstByte", 0, 1, true},
    {"LastByte", kMrLength - 1, 1, true},
    {"Whole", 0, kMrLength, true},
    {"ByteBeforeStart", -1, 1, false},
    {"StraddlesStart", -1, 2, false},
    {"ByteAtEnd", kMrLength, 1, false},
    {"StraddlesEnd", kMrLength - 1, 2, false},
    {"WholePlusOne", 0, kMrLength + 1, false},
};

enum class RemoteOp { kWrite, kRead };
void PrintTo(RemoteOp op, std::ostream* os) {
  *os << (op == RemoteOp::kWrite ? "Write" : "Read");
}

class RemoteBoundsTest
    : public ProviderTestWithParam<std::tuple<RemoteOp, Range>> {};

TEST_P(RemoteBoundsTest, AccessInsideSucceedsOutsideIsRemAccessErr) {
  const RemoteOp op = std::get<0>(param());
  const Range r = std::get<1>(param());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair(kBufferSize));
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<Mr> window,
      p->server().RegMr(p->sbuf.data() + kMrOffset, kMrLength,
                        kAccessLocalWrite | kAccessRemoteWrite |
                            kAccessRemoteRead));
  const std::vector<uint8_t> server_before = [&] {
    p->sbuf.FillPattern(1);
    return p->sbuf.Bytes(0, kBufferSize);
  }();
  p->cbuf.FillPattern(2);
  const std::vector<uint8_t> client_before = p->cbuf.Bytes(0, kBufferSize);

  const uint64_t remote = p->sbuf.addr(kMrOffset) + r.offset;
  const uint32_t length = static_cast<uint32_t>(r.length);
  if (op == RemoteOp::kWrite) {
    ASSERT_OK(p->client().PostWrite(7, p->cbuf.data(), length, p->cmr.get(),
                                    kSendSignaled, remote, window->rkey()));
  } else {
    ASSERT_OK(p->client().PostRead(7, p->cbuf.data(), length, p->cmr.get(),
                                   kSendSignaled, remote, window->rkey()));
  }
  ASSERT_OK_AND_ASSIGN(WorkCompletion wc, Await(p->client().send_cq()));
  EXPECT_EQ(wc.wr_id, 7u);
  if (r.inside) {
    EXPECT_THAT(wc, WcOk(7u, op == RemoteOp::kWrite ? WcOpcode::kRdmaWrite
                                                    : WcOpcode::kRdmaRead))
        << wc;
    std::vector<uint8_t> server_after = server_before;
    std::vector<uint8_t> client_after = client_before;
    const size_t at = kMrOffset + r.offset;
    for (size_t i = 0; i < length; ++i) {
      if (op == RemoteOp::kWrite) {
        server_after[at + i] = client_before[i];
      } else {
        client_after[i] = server_before[at + i];
      }
    }
    EXPECT_EQ(p->sbuf.Bytes(0, kBufferSize), server_after);
    EXPECT_EQ(p->cbuf.Bytes(0, kBufferSize), client_after);
    ExpectQpState(p->client().qp(), QpState::kRts);
  } else {
    EXPECT_THAT(wc, WcStatusIn(expect().bad_rkey)) << wc;
    EXPECT_EQ(wc.qp_num, p->client().qp()->qp_num());
    // Nothing moved on either side.
    EXPECT_EQ(p->sbuf.Bytes(0, kBufferSize), server_before);
    EXPECT_EQ(p->cbuf.Bytes(0, kBufferSize), client_before);
    ExpectQpState(p->client().qp(), QpState::kErr);
    EXPECT_THAT(Drain(p->server().recv_cq()), IsEmpty());
  }
}

INSTANTIATE_PROVIDER_TEST_SUITE_WITH_P(
    RemoteBoundsTest,
    ::testing::Combine(::testing::Values(RemoteOp::kWrite, RemoteOp::kRead),
                       ::testing::ValuesIn(kRanges)));

enum class LocalOp { kSend, kWrite, kRead };
void PrintTo(LocalOp op, std::ostream* os) {
  *os << (op == LocalOp::kSend ? "Send"
                               : op == LocalOp::kWrite ? "Write" : "Read");
}

// The client's SGE against a client MR over [kMrOffset, +kMrLength).
class LocalBoundsTest
    : public ProviderTestWithParam<std::tuple<LocalOp, Range>> {};

TEST_P(LocalBoundsTest, SgeInsideSucceedsOutsideIsLocalProtectionError) {
  const LocalOp op = std::get<0>(param());
  const Range r = std::get<1>(param());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair(kBufferSize));
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<Mr> window,
      p->client().RegMr(p->cbuf.data() + kMrOffset, kMrLength,
                        kAccessLocalWrite));
  p->cbuf.FillPattern(4);
  p->sbuf.FillPattern(5);
  const std::vector<uint8_t> client_before = p->cbuf.Bytes(0, kBufferSize);
  const std::vector<uint8_t> server_before = p->sbuf.Bytes(0, kBufferSize);

  ASSERT_OK(p->server().PostRecv(100, p->sbuf.data(), kBufferSize,
                                 p->smr.get()));
  Sge sge;
  sge.addr = p->cbuf.addr(kMrOffset) + r.offset;
  sge.length = static_cast<uint32_t>(r.length);
  sge.lkey = window->lkey();
  const uint64_t remote = p->sbuf.addr(kMrOffset);
  switch (op) {
    case LocalOp::kSend:
      ASSERT_OK(p->client().PostSendv(8, {&sge, 1}, kSendSignaled));
      break;
    case LocalOp::kWrite:
      ASSERT_OK(p->client().PostWritev(8, {&sge, 1}, kSendSignaled, remote,
                                       p->smr->rkey()));
      break;
    case LocalOp::kRead:
      ASSERT_OK(p->client().PostReadv(8, {&sge, 1}, kSendSignaled, remote,
                                      p->smr->rkey()));
      break;
  }
  ASSERT_OK_AND_ASSIGN(WorkCompletion wc, Await(p->client().send_cq()));
  EXPECT_EQ(wc.wr_id, 8u);
  if (r.inside) {
    EXPECT_EQ(wc.status, WcStatus::kSuccess) << wc;
    if (op == LocalOp::kSend) {
      ASSERT_OK_AND_ASSIGN(WorkCompletion rwc, Await(p->server().recv_cq()));
      EXPECT_THAT(rwc, WcOk(100u, WcOpcode::kRecv)) << rwc;
      EXPECT_EQ(rwc.byte_len, sge.length);
      EXPECT_EQ(p->sbuf.Bytes(0, sge.length),
                p->cbuf.Bytes(kMrOffset + r.offset, sge.length));
    } else if (op == LocalOp::kWrite) {
      EXPECT_EQ(p->sbuf.Bytes(kMrOffset, sge.length),
                p->cbuf.Bytes(kMrOffset + r.offset, sge.length));
    } else {
      EXPECT_EQ(p->cbuf.Bytes(kMrOffset + r.offset, sge.length),
                p->sbuf.Bytes(kMrOffset, sge.length));
    }
  } else {
    EXPECT_THAT(wc, WcStatusIn(expect().bad_lkey)) << wc;
    EXPECT_EQ(wc.qp_num, p->client().qp()->qp_num());
    ExpectQpState(p->client().qp(), QpState::kErr);
    // Protection: no byte outside the local MR was written. (Inside it, a
    // failed read leaves undefined contents.)
    EXPECT_EQ(p->cbuf.Bytes(0, kMrOffset),
              std::vector<uint8_t>(client_before.begin(),
                                   client_before.begin() + kMrOffset));
    EXPECT_EQ(p->cbuf.Bytes(kMrOffset + kMrLength,
                            kBufferSize - kMrOffset - kMrLength),
              std::vector<uint8_t>(
                  client_before.begin() + kMrOffset + kMrLength,
                  client_before.end()));
    if (op != LocalOp::kRead) {
      EXPECT_EQ(p->cbuf.Bytes(0, kBufferSize), client_before);
      // Nothing reached the server, or (a provider that checks packet by
      // packet) the whole path-MTU packets inside the MR, without a
      // completion.
      size_t sent = 0;
      if (expect().local_error_sends_earlier_packets && r.offset >= 0) {
        ASSERT_OK_AND_ASSIGN(QpAttr attr, p->client().qp()->Query());
        const size_t mtu = MtuBytes(attr.path_mtu);
        sent = static_cast<size_t>(kMrLength - r.offset) / mtu * mtu;
      }
      // (Watching the server's CQ first lets packets in flight land.)
      if (expect().remote_errors_terminate) {
        // iWARP: the error ends the connection (TERMINATE), which flushes
        // the server's receive.
        ASSERT_OK_AND_ASSIGN(WorkCompletion flushed,
                             Await(p->server().recv_cq()));
        EXPECT_THAT(flushed, WcFlushed(100u)) << flushed;
      } else {
        EXPECT_THAT(Drain(p->server().recv_cq()), IsEmpty());
      }
      std::vector<uint8_t> server_after = server_before;
      const size_t at = op == LocalOp::kSend ? 0 : kMrOffset;
      std::copy_n(client_before.begin() + kMrOffset + r.offset, sent,
                  server_after.begin() + at);
      EXPECT_EQ(p->sbuf.Bytes(0, kBufferSize), server_after)
          << sent << " bytes expected at the server";
    }
  }
}

const Range kLocalRanges[] = {
    {"Whole", 0, kMrLength, true},
    {"StraddlesStart", -1, 2, false},
    {"StraddlesEnd", kMrLength - 1, 2, false},
    {"WholePlusOne", 0, kMrLength + 1, false},
};

INSTANTIATE_PROVIDER_TEST_SUITE_WITH_P(
    LocalBoundsTest,
    ::testing::Combine(::testing::Values(LocalOp::kSend, LocalOp::kWrite,
                                         LocalOp::kRead),
                       ::testing::ValuesIn(kLocalRanges)));

}  // namespace
}  // namespace testing
}  // namespace verbsim
