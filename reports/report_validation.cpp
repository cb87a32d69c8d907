#include "reports/report_validation.hpp"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "common/errors.hpp"

namespace moe::report {

using nlohmann::json;

namespace {

// Physical ranges. A sample is one enqueue of at most a few layers, capped by the stopping
// rule's timeout (15 s by default): 1e9 us (1000 s) is far beyond any; kernels per sample and
// SM clocks likewise. GB/s above 100 TB/s is no memory system built, for the bandwidths that
// count bytes a memory moved; a nominal one (gbps_no_dedup: each token's expert reads counted
// apart, at prefill sizes far beyond any memory's rate) is bounded by nothing but its sign.
constexpr double kMaxSampleUs = 1e9;
constexpr double kMaxKernelsPerSample = 1e7;
constexpr double kMaxClockMhz = 10000;
constexpr double kMaxGbps = 1e5;

struct Range {
  double low;
  bool low_open;  // low itself is refused (times must be positive)
  double high;
  bool whole;     // an integer count
  const char* rule;
};

// The range of a raw series, or nullptr for one moebench does not know (left to the parser).
const Range* raw_range(const std::string& series) {
  static const Range time{0, true, kMaxSampleUs, false,
                          "a time must be finite and positive, in microseconds, at most 1e9"};
  static const Range kernel{0, false, kMaxSampleUs, false,
                            "a kernel time must be finite, 0 or more, in microseconds, at most 1e9"};
  static const Range count{0, false, kMaxKernelsPerSample, true,
                           "a kernel count must be a whole number from 0 to 1e7"};
  static const Range clock{0, false, kMaxClockMhz, false,
                           "an SM clock must be 0 (unknown) to 10000 MHz"};
  if (series == "gpu_time_us" || series == "host_time_us" || series == "host_time_with_cupti_us")
    return &time;
  if (series == "kernel_time_us" || series == "kernel_busy_us") return &kernel;
  if (series == "kernel_count") return &count;
  if (series == "sm_clock_mhz") return &clock;
  return nullptr;
}

bool in_range(double v, const Range& r) {
  if (!std::isfinite(v)) return false;
  if (r.low_open ? v <= r.low : v < r.low) return false;
  if (v > r.high) return false;
  return !r.whole || v == std::floor(v);
}

std::string number_text(double v) {
  std::ostringstream s;
  s.precision(17);
  s << v;
  return s.str();
}

std::string case_label(std::size_t index, const std::string& key) {
  return "case " + std::to_string(index) + (key.empty() ? "" : " (" + key + ")");
}

// `path` empty: the caller (load_report) adds "report 'PATH': " itself.
[[noreturn]] void refuse(const std::string& path, const std::string& where,
                         const std::string& what) {
  throw UsageError((path.empty() ? "" : "report '" + path + "': ") + where + ": " + what);
}

// The SAX scan: a stack of the containers it is in, each with its key (objects) or the index
// of the next element (arrays), so a number knows its path without a document being built.
class RawSeriesScan {
 public:
  using number_integer_t = json::number_integer_t;
  using number_unsigned_t = json::number_unsigned_t;
  using number_float_t = json::number_float_t;
  using string_t = json::string_t;
  using binary_t = json::binary_t;

  explicit RawSeriesScan(std::string path) : path_(std::move(path)) {}

  bool null() { return value(); }
  bool boolean(bool) { return value(); }
  bool number_integer(number_integer_t v) { return number(static_cast<double>(v)); }
  bool number_unsigned(number_unsigned_t v) { return number(static_cast<double>(v)); }
  bool number_float(number_float_t v, const string_t&) { return number(v); }
  bool string(string_t&) { return value(); }
  bool binary(binary_t&) { return value(); }
  bool start_object(std::size_t) {
    value();
    stack_.push_back({false, "", 0});
    return true;
  }
  bool key(string_t& k) {
    stack_.back().key = k;
    return true;
  }
  bool end_object() {
    stack_.pop_back();
    return true;
  }
  bool start_array(std::size_t) {
    value();
    stack_.push_back({true, "", 0});
    return true;
  }
  bool end_array() {
    stack_.pop_back();
    return true;
  }
  // Malformed text is the parser's to report, with its own message, when the document is read.
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) {
    return false;
  }

 private:
  struct Frame {
    bool array;
    std::string key;    // objects: the key of the value being read
    std::size_t index;  // arrays: the index of the value being read
  };

  // Every value advances its array's index (after number() has used it).
  bool value() {
    if (!stack_.empty() && stack_.back().array) ++stack_.back().index;
    return true;
  }

  // cases[i].measurements.NAME.raw.SERIES[k]: root, cases, case i, measurements, NAME, raw,
  // SERIES are the 7 frames below the number.
  bool number(double v) {
    if (stack_.size() == 7 && stack_[6].array && !stack_[5].array && stack_[4].key == "raw" &&
        stack_[0].key == "cases" && stack_[1].array && stack_[2].key == "measurements" &&
        !stack_[3].array)
      if (const Range* r = raw_range(stack_[5].key); r && !in_range(v, *r))
        // The case's index was advanced when its object began.
        refuse(path_, case_label(stack_[1].index - 1, ""),
               "measurements." + stack_[3].key + ".raw." + stack_[5].key + "[" +
                   std::to_string(stack_[6].index) + "] = " + number_text(v) + ": " + r->rule);
    return value();
  }

  std::string path_;
  std::vector<Frame> stack_;
};

void check_series(const std::vector<double>& values, const std::string& series,
                  const std::string& path, const std::string& where, const std::string& field) {
  const Range* r = raw_range(series);
  for (std::size_t k = 0; k < values.size(); ++k)
    if (r && !in_range(values[k], *r))
      refuse(path, where,
             field + "[" + std::to_string(k) + "] = " + number_text(values[k]) + ": " + r->rule);
}

// A summary's "count" (or a measurement's "samples") that disagrees with its series.
void check_count(const json& j, const char* pointer, std::size_t expected, const std::string& path,
                 const std::string& where, const std::string& field) {
  const json::json_pointer p(pointer);
  if (!j.contains(p)) return;  // summaries are optional for a reader: the raw series decide
  const json& v = j.at(p);
  if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<std::int64_t>() >= 0))
    refuse(path, where, field + " = " + v.dump() + " must be a whole number");
  if (v.get<std::uint64_t>() != expected)
    refuse(path, where,
           field + " = " + v.dump() + " but the series holds " + std::to_string(expected) +
               " samples");
}

void check_metric(const std::string& name, const Metric& m, const std::string& path,
                  const std::string& where) {
  const std::string field = "metrics." + name + ".value";
  const double v = m.value;
  auto refuse_range = [&](const std::string& rule) {
    refuse(path, where, field + " = " + number_text(v) + ": " + rule);
  };
  if (!std::isfinite(v)) refuse_range("must be a finite number");
  const bool nominal = name.size() >= 9 && name.compare(name.size() - 9, 9, "_no_dedup") == 0;
  if (m.unit == "GB/s" && !nominal && (v < 0 || v > kMaxGbps))
    refuse_range("a bandwidth must be 0 to 1e5 GB/s");
  if (m.unit == "GB/s" && nominal && v < 0) refuse_range("a nominal bandwidth must be 0 or more");
  if (name == "pct_of_read_ceiling" && (v < 0 || v > 1000))
    refuse_range("a percentage of the read ceiling must be 0 to 1000");
  if ((name == "pct_of_compute_ceiling" || name == "pct_of_roofline") && (v < 0 || v > 1000))
    refuse_range("a percentage of a ceiling must be 0 to 1000");
  if (m.unit == "TFLOP/s" && (v < 0 || v > 1e4)) refuse_range("an arithmetic rate must be 0 to 1e4 TFLOP/s");
  if (m.unit == "FLOP" && (v < 0 || v > 1e21)) refuse_range("a FLOP count must be 0 to 1e21");
  // A shift between two timings (route-telemetry's overhead and its interval) is a difference:
  // noise makes it negative when the effect is small, so only its size is bounded.
  const bool difference = name.rfind("overhead", 0) == 0;
  if (m.unit == "us" && difference && std::abs(v) > kMaxSampleUs)
    refuse_range("a time difference must be -1e9 to 1e9 microseconds");
  if (m.unit == "us" && !difference && (v < 0 || v > kMaxSampleUs))
    refuse_range("a time must be 0 to 1e9 microseconds");
  if (m.unit == "B" && (v < 0 || v > 1e18)) refuse_range("a byte count must be 0 to 1e18");
}

}  // namespace

std::uintmax_t max_report_bytes() {
  if (const char* env = std::getenv("MOEBENCH_MAX_REPORT_BYTES")) {
    char* end = nullptr;
    const unsigned long long v = std::strtoull(env, &end, 10);
    if (end != env && *end == '\0' && v > 0) return v;
    throw UsageError("MOEBENCH_MAX_REPORT_BYTES='" + std::string(env) +
                     "' is not valid: a whole number of bytes above 0");
  }
  return kDefaultMaxReportBytes;
}

void check_report_size(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return;  // the reader names what it is
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec) return;
  const std::uintmax_t limit = max_report_bytes();
  if (size > limit)
    throw UsageError("report '" + path + "' is " + std::to_string(size) +
                     " bytes, above the limit of " + std::to_string(limit) +
                     " bytes (set MOEBENCH_MAX_REPORT_BYTES to read it); not parsed");
}

void scan_raw_series(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return;  // the reader names what it is
  std::ifstream in(path, std::ios::binary);
  if (!in) return;  // the reader says why
  RawSeriesScan scan(path);
  try {
    (void)json::sax_parse(in, &scan);
  } catch (const json::exception&) {
    // Malformed JSON: read_json_file reports it with the parser's position and message.
  }
}

void validate_case(const CaseResult& c, const json& j, std::size_t index,
                   const std::string& /*path: load_report names the file*/) {
  const std::string path;
  const std::string where = case_label(index, c.key());
  if (c.m && (*c.m < 1 || *c.m > 65536))
    refuse(path, where, "m = " + std::to_string(*c.m) + ": tokens per forward must be 1 to 65536");
  for (const auto& [name, metric] : c.metrics) check_metric(name, metric, path, where);
  for (const auto& [name, m] : c.measurements) {
    const std::string at = "measurements." + name;
    const json& mj = j.at("measurements").at(name);
    const std::size_t n = m.gpu_time_us.size();
    if (n == 0) refuse(path, where, at + ".raw.gpu_time_us is empty: a measurement has samples");
    const std::pair<const std::vector<double>*, const char*> series[] = {
        {&m.gpu_time_us, "gpu_time_us"},       {&m.host_time_us, "host_time_us"},
        {&m.host_time_with_cupti_us, "host_time_with_cupti_us"},
        {&m.kernel_time_us, "kernel_time_us"}, {&m.kernel_busy_us, "kernel_busy_us"},
        {&m.kernel_count, "kernel_count"},     {&m.sm_clock_mhz, "sm_clock_mhz"}};
    for (const auto& [values, name_of] : series)
      check_series(*values, name_of, path, where, at + ".raw." + name_of);
    // Index-aligned with gpu_time_us (reports/SCHEMA.md): one entry per main-loop sample.
    auto aligned = [&](std::size_t size, const std::string& field, bool required) {
      if ((size == 0 && !required) || size == n) return;
      refuse(path, where,
             at + ".raw." + field + " has " + std::to_string(size) + " entries but gpu_time_us " +
                 std::to_string(n) + ": the series are index-aligned");
    };
    aligned(m.kernel_time_us.size(), "kernel_time_us", m.kernel_timing);
    aligned(m.kernel_count.size(), "kernel_count", m.kernel_timing);
    aligned(m.kernel_busy_us.size(), "kernel_busy_us", false);
    aligned(m.host_time_with_cupti_us.size(), "host_time_with_cupti_us", false);
    aligned(m.sm_clock_mhz.size(), "sm_clock_mhz", false);
    aligned(m.throttled.size(), "throttled", false);
    // Without kernel timing the main loop's own host times are index-aligned; with it they are
    // the host pass's, a series of its own.
    if (!m.kernel_timing) aligned(m.host_time_us.size(), "host_time_us", false);
    if (!std::isfinite(m.total_gpu_time_s) || m.total_gpu_time_s < 0)
      refuse(path, where,
             at + ".total_gpu_time_s = " + number_text(m.total_gpu_time_s) +
                 " must be finite and 0 or more");
    check_count(mj, "/samples", n, path, where, at + ".samples");
    check_count(mj, "/gpu_time_us/count", n, path, where, at + ".gpu_time_us.count");
    check_count(mj, "/host_time_us/count", m.host_time_us.size(), path, where,
                at + ".host_time_us.count");
    check_count(mj, "/kernel_time_us/count", m.kernel_time_us.size(), path, where,
                at + ".kernel_time_us.count");
    check_count(mj, "/throttled_samples", m.throttled_samples(), path, where,
                at + ".throttled_samples");
  }
}

}  // namespace moe::report
