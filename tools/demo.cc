// verbsim demo: the first steps of an RDMA program, one at a time, on a
// connected pair of RC queue pairs ("client" and "server").
//
//   bazel run //tools:demo                     the simulated fabric ("sim")
//   bazel run //tools:demo -- --provider=hw    a real device (rxe, siw, HCA)
//
// Each step prints the completion status each side sees. The exit status is
// non-zero if any step does not give the status real hardware gives.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "core/names.h"
#include "core/provider.h"

namespace {

using verbsim::Endpoint;
using verbsim::Mr;
using verbsim::QpState;
using verbsim::QpStateName;
using verbsim::WcStatus;
using verbsim::WcStatusName;
using verbsim::WorkCompletion;

int failures = 0;

// "  client send:  SUCCESS", plus what was expected when it differs.
void Report(const char* what, const absl::StatusOr<WorkCompletion>& wc,
            WcStatus expected) {
  if (!wc.ok()) {
    std::printf("  %-14s %s\n", what,
                std::string(wc.status().message()).c_str());
    ++failures;
    return;
  }
  std::string line = std::string(WcStatusName(wc->status));
  if (wc->status != expected) {
    absl::StrAppend(&line, "   <-- expected ", WcStatusName(expected));
    ++failures;
  }
  std::printf("  %-14s %s\n", what, line.c_str());
}

// Posts (the status of the post call), then waits for the send completion.
void SendSide(const char* what, const absl::Status& posted, Endpoint& ep,
              WcStatus expected) {
  if (!posted.ok()) {
    std::printf("  %-14s post failed: %s\n", what,
                std::string(posted.message()).c_str());
    ++failures;
    return;
  }
  Report(what, ep.GetSendComp(), expected);
}

// One-sided operations leave no completion at the target.
void NoCompletion(const char* what, Endpoint& ep, const char* why) {
  WorkCompletion wc;
  absl::StatusOr<int> n = ep.recv_cq()->Poll({&wc, 1});
  if (!n.ok()) {
    std::printf("  %-14s %s\n", what,
                std::string(n.status().message()).c_str());
    ++failures;
  } else if (*n == 0) {
    std::printf("  %-14s no completion (%s)\n", what, why);
  } else {
    std::printf("  %-14s %s   <-- expected no completion\n", what,
                std::string(WcStatusName(wc.status)).c_str());
    ++failures;
  }
}

void ShowBytes(const char* what, const char* bytes, const char* expected) {
  const bool same = std::strcmp(bytes, expected) == 0;
  std::printf("  %-14s \"%s\"%s\n", what, bytes,
              same ? "" : "   <-- not what was sent");
  if (!same) ++failures;
}

int Fatal(absl::string_view step, const absl::Status& status) {
  std::printf("  %s failed: %s\n", std::string(step).c_str(),
              std::string(status.message()).c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string spec = verbsim::ProviderSpecFromEnv();
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (absl::ConsumePrefix(&arg, "--provider=")) {
      spec = std::string(arg);
    } else {
      std::fprintf(stderr,
                   "usage: demo [--provider=SPEC]\n"
                   "  SPEC: sim (default, or $VERBSIM_PROVIDER), sim:rxe, hw, "
                   "hw:rxe0 ...\n");
      return 2;
    }
  }
  auto provider = verbsim::OpenProvider(spec);
  if (!provider.ok()) return Fatal("opening the provider", provider.status());
  std::printf("verbsim demo on provider \"%s\"\n\n",
              (*provider)->name().c_str());

  // 1. Connect: listen, connect, accept (the rdma_cm handshake).
  std::printf("1. Connect two RC queue pairs\n");
  auto pair = verbsim::CreateConnectedPair(**provider);
  if (!pair.ok()) return Fatal("connecting", pair.status());
  Endpoint& client = *pair->client;
  Endpoint& server = *pair->server;
  if (auto s = server.WaitConnected(); !s.ok()) return Fatal("accepting", s);
  std::printf("  %-14s qp %u, %s\n", "client:", client.qp()->qp_num(),
              std::string(QpStateName(client.qp()->state())).c_str());
  std::printf("  %-14s qp %u, %s\n", "server:", server.qp()->qp_num(),
              std::string(QpStateName(server.qp()->state())).c_str());

  // Memory the NICs may touch must be registered first. The server's
  // `window` may be written and read remotely by whoever holds its rkey.
  char out[64] = {};     // client: what it sends, writes and reads into
  char inbox[64] = {};   // server: receive buffer
  char window[64] = {};  // server: target of RDMA write and read
  auto out_mr = client.RegMsgs(out, sizeof(out));
  auto inbox_mr = server.RegMsgs(inbox, sizeof(inbox));
  auto window_mr =
      server.RegMr(window, sizeof(window),
                   verbsim::kAccessLocalWrite | verbsim::kAccessRemoteWrite |
                       verbsim::kAccessRemoteRead);
  if (!out_mr.ok()) return Fatal("RegMsgs", out_mr.status());
  if (!inbox_mr.ok()) return Fatal("RegMsgs", inbox_mr.status());
  if (!window_mr.ok()) return Fatal("RegMr", window_mr.status());
  const Mr& mr = **out_mr;
  const uint64_t remote = reinterpret_cast<uint64_t>(window);
  const uint32_t rkey = (*window_mr)->rkey();

  // 2. Send/receive: the server posts a receive first, then the client sends.
  std::printf("\n2. Send a message, client -> server\n");
  const char* hello = "hello, verbs";
  std::strcpy(out, hello);
  const size_t hello_len = std::strlen(hello) + 1;
  if (auto s = server.PostRecv(1, inbox, sizeof(inbox), inbox_mr->get());
      !s.ok()) {
    return Fatal("PostRecv", s);
  }
  SendSide("client send:",
           client.PostSend(2, out, hello_len, &mr, verbsim::kSendSignaled),
           client, WcStatus::kSuccess);
  auto received = server.GetRecvComp();
  Report("server recv:", received, WcStatus::kSuccess);
  if (received.ok()) std::printf("  %-14s %u\n", "bytes:", received->byte_len);
  ShowBytes("received:", inbox, hello);

  // 3. RDMA write: straight into the server's memory.
  std::printf("\n3. RDMA write into the server's window (rkey 0x%x)\n", rkey);
  const char* written = "written by RDMA";
  std::strcpy(out, written);
  SendSide("client write:",
           client.PostWrite(3, out, std::strlen(written) + 1, &mr,
                            verbsim::kSendSignaled, remote, rkey),
           client, WcStatus::kSuccess);
  NoCompletion("server:", server, "one-sided: its CPU is not involved");
  ShowBytes("window holds:", window, written);

  // 4. RDMA read: fetch it back into a cleared local buffer.
  std::printf("\n4. RDMA read it back\n");
  std::memset(out, 0, sizeof(out));
  SendSide("client read:",
           client.PostRead(4, out, std::strlen(written) + 1, &mr,
                           verbsim::kSendSignaled, remote, rkey),
           client, WcStatus::kSuccess);
  NoCompletion("server:", server, "one-sided: its CPU is not involved");
  ShowBytes("read back:", out, written);

  // 5. A wrong rkey: the server's NIC refuses, the client's QP breaks.
  const uint32_t bad_rkey = rkey ^ 0x00ffff00u;
  std::printf("\n5. RDMA write with a bad rkey (0x%x)\n", bad_rkey);
  SendSide("client write:",
           client.PostWrite(5, out, 8, &mr, verbsim::kSendSignaled, remote,
                            bad_rkey),
           client, WcStatus::kRemAccessErr);
  NoCompletion("server:", server, "its NIC only answered with a NAK");
  const QpState after = client.qp()->state();
  std::printf("  %-14s %s%s\n",
              "client qp:", std::string(QpStateName(after)).c_str(),
              after == QpState::kErr ? "" : "   <-- expected ERR");
  if (after != QpState::kErr) ++failures;
  std::printf("  %-14s %s\n", "server qp:",
              std::string(QpStateName(server.qp()->state())).c_str());

  // 6. A QP in ERR still accepts posts, but completes them as flushed.
  std::printf("\n6. Send again on the broken queue pair\n");
  SendSide(
      "client send:", client.PostSend(6, out, 4, &mr, verbsim::kSendSignaled),
      client, WcStatus::kWrFlushErr);

  if (failures == 0) {
    std::printf("\nEvery step gave the expected status.\n");
    return 0;
  }
  std::printf("\n%d result(s) differ from what was expected.\n", failures);
  return 1;
}
