#include "io/probing_json_reader.hpp"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "io/probing_rows.hpp"

namespace culprit {
namespace {

// SAX events to rows: the objects directly inside the top-level array (or a top-level
// object alone) are rows; their scalar values are cells, nested values are ignored.
class JsonRows final : public nlohmann::json_sax<nlohmann::json> {
 public:
  JsonRows(ProbingRows& rows, InputReport& report) : rows_(rows), report_(report) {
    columns_.fill(-1);
  }

  bool null() override { return value(std::string_view()); }
  bool boolean(bool v) override { return value(v ? "1" : "0"); }
  bool number_integer(number_integer_t v) override { return integer(v); }
  bool number_unsigned(number_unsigned_t v) override { return integer(v); }
  bool number_float(number_float_t v, const string_t& text) override {
    // An integer written with a fraction or exponent (1.0, 1.7e18) is that integer.
    if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 9.2e18)
      return integer(static_cast<int64_t>(v));
    return value(text);
  }
  bool string(string_t& v) override { return value(v); }
  bool binary(binary_t&) override { return value(std::string_view()); }

  bool start_object(std::size_t) override {
    started_ = true;
    ++depth_;
    if (row_depth_ == 0 && (depth_ == 1 || (depth_ == 2 && top_array_))) {
      row_depth_ = depth_;
      key_ = -1;
      for (int c : filled_) cells_[c].clear();
      filled_.clear();
    } else if (row_depth_ == 0 && depth_ == 2) {
      ++not_rows_;
    } else if (depth_ == row_depth_ + 1) {
      key_ = -1;  // a nested value: its column stays blank
    }
    return true;
  }
  bool end_object() override {
    bool ok = true;
    if (depth_ == row_depth_) {
      row_depth_ = 0;
      ok = emit();
    }
    --depth_;
    return ok;
  }
  bool start_array(std::size_t) override {
    started_ = true;
    ++depth_;
    if (depth_ == 1) top_array_ = true;
    else if (row_depth_ == 0 && depth_ == 2) ++not_rows_;
    else if (depth_ == row_depth_ + 1) key_ = -1;
    return true;
  }
  bool end_array() override {
    --depth_;
    return true;
  }
  bool key(string_t& k) override {
    if (depth_ == row_depth_) {
      key_ = probing_column(k);
      if (key_ >= 0 && columns_[key_] < 0) {
        columns_[key_] = key_;  // cells are indexed by column
        columns_changed_ = true;
      }
    }
    return true;
  }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& ex) override {
    if (!started_ && !bare_ && std::strstr(ex.what(), "unexpected end of input")) {
      blank_ = true;  // the input ended before any value: nothing but white space
      return false;
    }
    // "[json.exception.parse_error.101] parse error at line 1, column 8: syntax error while
    // parsing object - unexpected end of input; expected '}'": keep the part after " - ".
    std::string what = ex.what();
    size_t dash = what.find(" - ");
    what = dash == std::string::npos ? std::string("syntax error") : what.substr(dash + 3);
    what = what.substr(0, std::min<size_t>(what.find(';'), 60));
    error_ = "malformed JSON at byte " + std::to_string(position) + " (" + what + "): the " +
             std::to_string(rows_read_) + " rows before it are kept";
    return false;
  }

  // After the parse: the file's error, if any.
  void finish() {
    if (not_rows_) report_.reject("JSON array element that is not a row object", not_rows_);
    if (!error_.empty()) report_.error = error_;
    else if (blank_ && report_.error.empty()) report_.error = "empty JSON file";
    else if ((bare_ || !started_) && report_.error.empty())
      report_.error = "not a probing JSON export (an array of row objects)";
  }

 private:
  template <class Int>
  bool integer(Int v) {
    char buf[24];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
    return value(std::string_view(buf, static_cast<size_t>(end - buf)));
  }

  bool value(std::string_view v) {
    if (depth_ == 0) {
      bare_ = true;  // a lone scalar is not an export
    } else if (row_depth_ != 0 && depth_ == row_depth_) {
      if (key_ >= 0) {
        if (cells_[key_].empty() && !v.empty()) filled_.push_back(key_);
        cells_[key_].assign(v.data(), v.size());
      }
    } else if (row_depth_ == 0 && depth_ == 1 && top_array_) {
      ++not_rows_;
    }
    return true;
  }

  bool emit() {
    ++rows_read_;
    if (columns_changed_) {
      columns_changed_ = false;
      if (!rows_.set_columns(columns_)) return false;  // no probing table: stop here
    }
    for (int c = 0; c < kProbingColumnCount; ++c) views_[c] = cells_[c];
    rows_.row(views_.data(), views_.size());
    return true;
  }

  ProbingRows& rows_;
  InputReport& report_;
  ProbingColumns columns_;
  bool columns_changed_ = true;  // the first row names the table, whatever its keys
  std::array<std::string, kProbingColumnCount> cells_;
  std::array<std::string_view, kProbingColumnCount> views_;
  std::vector<int> filled_;  // cells holding text, cleared at the next row
  int depth_ = 0, row_depth_ = 0, key_ = -1;
  bool top_array_ = false, started_ = false, blank_ = false, bare_ = false;
  uint64_t rows_read_ = 0, not_rows_ = 0;
  std::string error_;
};

template <class Parse>
void read_json(const std::string& name, const std::string& host, LocalData& data, Parse parse) {
  ProbingRows rows(name, host, "probing-json", data);
  JsonRows sax(rows, rows.report());
  try {
    parse(sax);
  } catch (const std::exception& e) {
    rows.report().error = std::string("cannot read: ") + e.what();
  }
  sax.finish();
  rows.finish();
}

}  // namespace

void read_probing_json_file(const std::string& path, const std::string& host, LocalData& data) {
  read_json(path, host, data, [&](JsonRows& sax) {
    std::vector<char> buffer(1 << 20);
    std::ifstream in;
    in.rdbuf()->pubsetbuf(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    in.open(path, std::ios::binary);
    if (!in) throw std::runtime_error(std::strerror(errno));
    nlohmann::json::sax_parse(in, &sax);
  });
}

void read_probing_json_buffer(std::string_view content, const std::string& name,
                              const std::string& host, LocalData& data) {
  read_json(name, host, data, [&](JsonRows& sax) {
    nlohmann::json::sax_parse(content.data(), content.data() + content.size(), &sax);
  });
}

}  // namespace culprit
