// Runs the code example of README.md, and fails when the README's block and
// the copy below drift apart.
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

#include "core/provider.h"
#include "gtest/gtest.h"

namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The lines between the markers, with the indentation of the first one
// removed.
std::string Between(const std::string& text, const std::string& begin,
                    const std::string& end) {
  size_t b = text.find(begin);
  if (b == std::string::npos) return "";
  b = text.find('\n', b) + 1;
  size_t e = text.find(end, b);
  if (e == std::string::npos) return "";
  e = text.rfind('\n', e) + 1;
  std::string block = text.substr(b, e - b);
  size_t indent = block.find_first_not_of(' ');
  std::stringstream in(block), out;
  std::string line;
  while (std::getline(in, line)) {
    out << (line.size() >= indent ? line.substr(indent) : line) << "\n";
  }
  return out.str();
}

TEST(ReadmeExample, RunsAndMatchesTheReadme) {
  // BEGIN README EXAMPLE
  auto provider = verbsim::OpenProvider(verbsim::ProviderSpecFromEnv());  // "sim" by default
  auto pair = verbsim::CreateConnectedPair(**provider);                    // RC, loopback
  verbsim::Endpoint& client = *pair->client;
  verbsim::Endpoint& server = *pair->server;

  char src[64] = "hello", dst[64] = {};
  auto src_mr = client.RegMsgs(src, sizeof(src));
  auto dst_mr = server.RegWrite(dst, sizeof(dst));
  absl::Status posted = client.PostWrite(
      /*wr_id=*/1, src, 6, src_mr->get(), verbsim::kSendSignaled,
      reinterpret_cast<uint64_t>(dst), (*dst_mr)->rkey());
  auto wc = client.GetSendComp();  // wc->status == verbsim::WcStatus::kSuccess
  // END README EXAMPLE
  ASSERT_TRUE(posted.ok()) << posted;
  ASSERT_TRUE(wc.ok()) << wc.status();
  EXPECT_EQ(wc->status, verbsim::WcStatus::kSuccess);
  EXPECT_STREQ(dst, "hello");

  const std::string me = ReadFile("docs/tests/readme_example_test.cc");
  const std::string readme = ReadFile("README.md");
  const std::string code = Between(me, "// BEGIN README EXAMPLE",
                                   "// END README EXAMPLE");
  const std::string block = Between(readme, "```c++", "```");
  ASSERT_FALSE(code.empty());
  EXPECT_NE(block.find(code), std::string::npos)
      << "README.md's example differs from this test's copy:\n"
      << block << "\nversus\n"
      << code;
}

}  // namespace
