// The pipe a probe's child process sends its finished cases on (reports/run_events.hpp): whole
// lines only, each case checked as the report loader checks one.
#include <doctest/doctest.h>

#include <unistd.h>

#include <string>

#include "common/errors.hpp"
#include "reports/run_events.hpp"

namespace {

moe::report::CaseResult a_case(int m) {
  moe::report::CaseResult c;
  c.probe = "bandwidth";
  c.name = "step";
  c.shape = "tiny";
  c.m = m;
  c.seed = 7;
  c.verdict = moe::report::Verdict::pass;
  c.reason = "ok";
  c.checks.push_back({"outputs_match", true, "within 1e-2"});
  return c;
}

// What a RunEventWriter sends, read back from a real pipe.
std::string sent(const auto& send) {
  int ends[2];
  REQUIRE(::pipe(ends) == 0);
  {
    const moe::report::RunEventWriter writer(ends[1]);
    send(writer);
  }
  ::close(ends[1]);
  std::string bytes;
  char buf[4096];
  for (ssize_t n; (n = ::read(ends[0], buf, sizeof buf)) > 0;) bytes.append(buf, n);
  ::close(ends[0]);
  return bytes;
}

}  // namespace

TEST_CASE("each event is one whole line, and a case comes back as it was sent") {
  const std::string bytes = sent([](const moe::report::RunEventWriter& w) {
    w.send_case(a_case(4));
    w.send_environment("ranks", {{"world", 2}});
    w.send_complete();
  });
  moe::report::RunEventLines lines;
  // Cut anywhere, even inside a line: nothing is returned before its newline.
  const std::size_t cut = bytes.find('\n') / 2;
  CHECK(lines.feed(bytes.substr(0, cut)).empty());
  const auto got = lines.feed(bytes.substr(cut));
  REQUIRE(got.size() == 3);
  CHECK(lines.pending_bytes() == 0);

  const auto c = moe::report::parse_run_event(got[0], 0);
  REQUIRE(c.kind == moe::report::RunEvent::Kind::case_result);
  CHECK(c.case_result.key() == a_case(4).key());
  CHECK(c.case_result.m == 4);
  CHECK(c.case_result.checks.size() == 1);
  const auto e = moe::report::parse_run_event(got[1], 1);
  REQUIRE(e.kind == moe::report::RunEvent::Kind::environment);
  CHECK(e.key == "ranks");
  CHECK(e.value.at("world") == 2);
  CHECK(moe::report::parse_run_event(got[2], 1).kind == moe::report::RunEvent::Kind::complete);
}

TEST_CASE("a line cut off by the child's death is never an event") {
  moe::report::RunEventLines lines;
  const auto got = lines.feed("{\"complete\": true}\n{\"case\": {\"probe\": \"copy\"");
  CHECK(got.size() == 1);
  CHECK(lines.pending_bytes() > 0);
}

TEST_CASE("a line that is not an event, or a case the loader would refuse, is refused by name") {
  struct Bad {
    std::string line;
    const char* says;
  };
  nlohmann::json impossible = {{"case", a_case(0)}};  // m = 0 tokens
  nlohmann::json mistyped = {{"case", a_case(1)}};
  mistyped["case"]["seed"] = "seven";
  const Bad bad[] = {
      {"not json", "not JSON"},
      {"[1, 2]", "got array"},
      {R"({"complete": true, "case": {}})", "must be one of"},
      {R"({"finished": true})", "got the field \"finished\""},
      {impossible.dump(), "m = 0: tokens per forward must be 1 to 65536"},
      {mistyped.dump(), "missing or mistyped field"},
      {R"({"environment": {"value": 1}})", "missing or mistyped field"},
  };
  for (const Bad& b : bad) {
    CAPTURE(b.line);
    try {
      (void)moe::report::parse_run_event(b.line, 3);
      FAIL("accepted");
    } catch (const moe::UsageError& e) {
      CHECK(std::string(e.what()).find(b.says) != std::string::npos);
    }
  }
}
