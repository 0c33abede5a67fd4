// Reading a scenario file: each line split into words (Lex), each command
// checked before anything runs (scenario_check.h).
#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "tools/verbsim/scenario.h"
#include "tools/verbsim/scenario_check.h"

namespace verbsim::cli {
namespace {

using scenario_internal::Arg;

// The verbs whose form takes the rest of the line as free text (title, spec,
// say, faults).
bool IsFreeTextVerb(absl::string_view verb) {
  for (const scenario_internal::Form& f : scenario_internal::Forms()) {
    if (verb == f.verb && !f.args.empty() &&
        (f.args[0] == Arg::kText || f.args[0] == Arg::kFaultRules)) {
      return true;
    }
  }
  return false;
}

// Splits one line into words. '#' outside quotes starts a comment; "..."
// is one word with \" \\ and \n escapes.
absl::Status Lex(absl::string_view file, int line_no, absl::string_view line,
                 Command* out) {
  size_t i = 0;
  auto col = [&](size_t at) { return static_cast<int>(at) + 1; };
  while (i < line.size()) {
    const char c = line[i];
    if (c == ' ' || c == '\t' || c == '\r') {
      ++i;
      continue;
    }
    if (c == '#') break;
    Token t;
    t.column = col(i);
    if (out->words.size() == 1 && IsFreeTextVerb(out->words[0].text)) {
      // The rest of the line is free text (a quoted string is unquoted).
      absl::string_view rest =
          absl::StripTrailingAsciiWhitespace(line.substr(i));
      out->rest_column = col(i);
      if (rest.size() >= 2 && rest.front() == '"' && rest.back() == '"') {
        rest = rest.substr(1, rest.size() - 2);
        ++out->rest_column;
      }
      out->rest = std::string(rest);
      return absl::OkStatus();
    }
    if (c == '"') {
      t.quoted = true;
      ++i;
      bool closed = false;
      while (i < line.size()) {
        char d = line[i];
        if (d == '"') {
          closed = true;
          ++i;
          break;
        }
        if (d == '\\' && i + 1 < line.size()) {
          char e = line[i + 1];
          t.text += e == 'n' ? '\n' : e == 't' ? '\t' : e;
          i += 2;
          continue;
        }
        t.text += d;
        ++i;
      }
      if (!closed) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "%s:%d:%d: expected a closing '\"' before the end of the line",
            file, line_no, t.column));
      }
    } else {
      while (i < line.size() && line[i] != ' ' && line[i] != '\t' &&
             line[i] != '\r' && line[i] != '#') {
        t.text += line[i];
        ++i;
      }
    }
    out->words.push_back(std::move(t));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Scenario> ParseScenario(absl::string_view file,
                                       absl::string_view text) {
  Scenario sc;
  sc.file = std::string(file);
  int line_no = 0;
  scenario_internal::Defined defined;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    Command c;
    c.line = line_no;
    if (absl::Status s = Lex(file, line_no, line, &c); !s.ok()) return s;
    if (c.words.empty()) continue;
    if (absl::Status s = scenario_internal::CheckCommand(file, c, &defined);
        !s.ok()) {
      return s;
    }
    if (c.words[0].text == "title") {
      sc.title = c.rest;
      continue;
    }
    if (c.words[0].text == "spec") {
      sc.spec.push_back(c.rest);
      continue;
    }
    sc.commands.push_back(std::move(c));
  }
  return sc;
}

}  // namespace verbsim::cli
