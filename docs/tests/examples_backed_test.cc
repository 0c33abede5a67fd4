// Every code example in the transport pages of docs/ (ud.md, uc.md, srq.md,
// mw.md) is backed by a conformance test: the line after each ```cpp block
// reads
//   Tested by: tests/conformance/<file>.cc, <Suite>.<Name>
// and every non-blank line of the block appears, in order and with its
// leading and trailing blanks ignored, in the body of TEST_P(<Suite>, <Name>)
// of that file. The page cannot drift from what the suite checks.
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/strings/string_view.h"
#include "gtest/gtest.h"

namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Example {
  int line = 0;  // of the opening fence
  std::vector<std::string> code;
  std::string backing;  // what follows "Tested by: "
};

std::vector<Example> Examples(const std::string& page) {
  std::vector<Example> out;
  std::vector<std::string> lines = absl::StrSplit(page, '\n');
  for (size_t i = 0; i < lines.size(); ++i) {
    if (absl::StripAsciiWhitespace(lines[i]) != "```cpp") continue;
    Example e;
    e.line = static_cast<int>(i + 1);
    size_t j = i + 1;
    for (; j < lines.size() && absl::StripAsciiWhitespace(lines[j]) != "```";
         ++j) {
      absl::string_view t = absl::StripAsciiWhitespace(lines[j]);
      if (!t.empty()) e.code.emplace_back(t);
    }
    // The backing line: the first non-blank line after the fence.
    size_t k = j + 1;
    while (k < lines.size() && absl::StripAsciiWhitespace(lines[k]).empty()) ++k;
    if (k < lines.size()) {
      absl::string_view t = absl::StripAsciiWhitespace(lines[k]);
      if (absl::ConsumePrefix(&t, "Tested by: ")) e.backing = std::string(t);
    }
    out.push_back(std::move(e));
    i = j;
  }
  return out;
}

// The body of TEST_P(suite, name) in `source`: from its line to the next
// TEST_P or the end.
std::vector<std::string> BodyOfTest(const std::string& source,
                                  const std::string& suite,
                                  const std::string& name) {
  const std::string head = "TEST_P(" + suite + ", " + name + ")";
  const size_t at = source.find(head);
  if (at == std::string::npos) return {};
  size_t end = source.find("\nTEST_P(", at + head.size());
  if (end == std::string::npos) end = source.size();
  std::vector<std::string> body;
  for (absl::string_view l :
       absl::StrSplit(source.substr(at, end - at), '\n')) {
    body.emplace_back(absl::StripAsciiWhitespace(l));
  }
  return body;
}

class ExamplesBackedTest : public ::testing::TestWithParam<const char*> {};

TEST_P(ExamplesBackedTest, EveryExampleIsInItsTest) {
  const std::string page_path = std::string("docs/") + GetParam();
  const std::string page = ReadFile(page_path);
  ASSERT_FALSE(page.empty()) << page_path << " is missing";
  const std::vector<Example> examples = Examples(page);
  EXPECT_FALSE(examples.empty()) << page_path << " shows no example";
  for (const Example& e : examples) {
    SCOPED_TRACE(page_path + ":" + std::to_string(e.line));
    std::vector<std::string> parts = absl::StrSplit(e.backing, ", ");
    ASSERT_EQ(parts.size(), 2u)
        << "no 'Tested by: tests/conformance/<file>.cc, <Suite>.<Name>' "
           "line after the example";
    std::vector<std::string> test = absl::StrSplit(parts[1], '.');
    ASSERT_EQ(test.size(), 2u) << "'" << parts[1] << "' is not Suite.Name";
    const std::string source = ReadFile(parts[0]);
    ASSERT_FALSE(source.empty()) << parts[0] << " is missing";
    const std::vector<std::string> body = BodyOfTest(source, test[0], test[1]);
    ASSERT_FALSE(body.empty())
        << "no TEST_P(" << test[0] << ", " << test[1] << ") in " << parts[0];
    size_t pos = 0;
    for (const std::string& want : e.code) {
      while (pos < body.size() && body[pos] != want) ++pos;
      ASSERT_LT(pos, body.size())
          << "the example's line\n  " << want << "\nis not (in order) in "
          << parts[1];
      ++pos;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Pages, ExamplesBackedTest,
                         ::testing::Values("ud.md", "uc.md", "srq.md",
                                           "mw.md"));

}  // namespace
