#include "tests/observed.h"

#include <algorithm>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "core/errors.h"
#include "core/names.h"
#include "gtest/gtest.h"

namespace verbsim {
namespace testing {
namespace {

// Distinct names in first-seen order.
class NameList {
 public:
  void Add(std::string name) {
    if (std::find(names_.begin(), names_.end(), name) == names_.end()) {
      names_.push_back(std::move(name));
    }
  }
  bool empty() const { return names_.empty(); }
  std::string Joined() const { return absl::StrJoin(names_, " "); }
  void Clear() { names_.clear(); }

 private:
  std::vector<std::string> names_;
};

struct Notes {
  std::mutex mu;
  NameList completions;
  NameList errnos;
  NameList values;
};

Notes& TheNotes() {
  static Notes* notes = new Notes;
  return *notes;
}

// Turns the notes into properties of the case that is ending. OnTestEnd runs
// while the case is still the current one, so RecordProperty lands on it
// (and the XML printer writes properties at the end of the run).
class RecordObserved : public ::testing::EmptyTestEventListener {
  void OnTestStart(const ::testing::TestInfo&) override {
    Notes& notes = TheNotes();
    std::lock_guard<std::mutex> lock(notes.mu);
    notes.completions.Clear();
    notes.errnos.Clear();
    notes.values.Clear();
  }
  void OnTestEnd(const ::testing::TestInfo&) override {
    Notes& notes = TheNotes();
    std::lock_guard<std::mutex> lock(notes.mu);
    if (!notes.completions.empty()) {
      ::testing::Test::RecordProperty("completions",
                                      notes.completions.Joined());
    }
    if (!notes.errnos.empty()) {
      ::testing::Test::RecordProperty("errnos", notes.errnos.Joined());
    }
    if (!notes.values.empty()) {
      ::testing::Test::RecordProperty("values", notes.values.Joined());
    }
  }
};

const bool kRegistered = [] {
  ::testing::UnitTest::GetInstance()->listeners().Append(new RecordObserved);
  return true;
}();

}  // namespace

void NoteCompletionStatus(WcStatus status) {
  Notes& notes = TheNotes();
  std::lock_guard<std::mutex> lock(notes.mu);
  notes.completions.Add(std::string(WcStatusName(status)));
}

void NoteErrno(int err) {
  Notes& notes = TheNotes();
  std::lock_guard<std::mutex> lock(notes.mu);
  notes.errnos.Add(err == 0 ? std::string("OK") : std::string(ErrnoName(err)));
}

void NoteValue(const std::string& name, long long value) {
  Notes& notes = TheNotes();
  std::lock_guard<std::mutex> lock(notes.mu);
  notes.values.Add(name + "=" + std::to_string(value));
}

}  // namespace testing
}  // namespace verbsim
