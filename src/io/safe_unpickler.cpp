#include "io/safe_unpickler.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <new>
#include <string>
#include <unordered_map>
#include <vector>

namespace culprit {
namespace {

// Opcode values of the pickle format that this reader executes.
namespace op {
constexpr uint8_t kMark = '(';
constexpr uint8_t kStop = '.';
constexpr uint8_t kPop = '0';
constexpr uint8_t kPopMark = '1';
constexpr uint8_t kDup = '2';
constexpr uint8_t kBinint = 'J';
constexpr uint8_t kBinint1 = 'K';
constexpr uint8_t kBinint2 = 'M';
constexpr uint8_t kNone = 'N';
constexpr uint8_t kBinunicode = 'X';
constexpr uint8_t kAppend = 'a';
constexpr uint8_t kDict = 'd';
constexpr uint8_t kEmptyDict = '}';
constexpr uint8_t kAppends = 'e';
constexpr uint8_t kBinget = 'h';
constexpr uint8_t kLongBinget = 'j';
constexpr uint8_t kList = 'l';
constexpr uint8_t kEmptyList = ']';
constexpr uint8_t kBinput = 'q';
constexpr uint8_t kLongBinput = 'r';
constexpr uint8_t kSetitem = 's';
constexpr uint8_t kTuple = 't';
constexpr uint8_t kEmptyTuple = ')';
constexpr uint8_t kSetitems = 'u';
constexpr uint8_t kBinfloat = 'G';
constexpr uint8_t kProto = 0x80;
constexpr uint8_t kTuple1 = 0x85;
constexpr uint8_t kTuple2 = 0x86;
constexpr uint8_t kTuple3 = 0x87;
constexpr uint8_t kNewtrue = 0x88;
constexpr uint8_t kNewfalse = 0x89;
constexpr uint8_t kLong1 = 0x8a;
constexpr uint8_t kLong4 = 0x8b;
constexpr uint8_t kShortBinunicode = 0x8c;
constexpr uint8_t kBinunicode8 = 0x8d;
constexpr uint8_t kMemoize = 0x94;
constexpr uint8_t kFrame = 0x95;
}  // namespace op

constexpr int kHighestProtocol = 5;

// Opcodes that exist but are refused, with what they would have done; the message names both
// so that a refused dump says why ("class reference (GLOBAL) refused").
struct Refusal {
  uint8_t code;
  const char* name;
  const char* what;
};
constexpr Refusal kRefused[] = {
    {'c', "GLOBAL", "class reference"},
    {0x93, "STACK_GLOBAL", "class reference"},
    {'R', "REDUCE", "call"},
    {'b', "BUILD", "object state"},
    {'i', "INST", "object construction"},
    {'o', "OBJ", "object construction"},
    {0x81, "NEWOBJ", "object construction"},
    {0x92, "NEWOBJ_EX", "object construction"},
    {0x82, "EXT1", "extension registry reference"},
    {0x83, "EXT2", "extension registry reference"},
    {0x84, "EXT4", "extension registry reference"},
    {'P', "PERSID", "persistent id"},
    {'Q', "BINPERSID", "persistent id"},
    {'B', "BINBYTES", "bytes (no JSON form)"},
    {'C', "SHORT_BINBYTES", "bytes (no JSON form)"},
    {0x8e, "BINBYTES8", "bytes (no JSON form)"},
    {0x96, "BYTEARRAY8", "bytearray (no JSON form)"},
    {0x97, "NEXT_BUFFER", "out-of-band buffer"},
    {0x98, "READONLY_BUFFER", "out-of-band buffer"},
    {0x8f, "EMPTY_SET", "set (no JSON form)"},
    {0x90, "ADDITEMS", "set (no JSON form)"},
    {0x91, "FROZENSET", "set (no JSON form)"},
    {'T', "BINSTRING", "Python 2 string"},
    {'U', "SHORT_BINSTRING", "Python 2 string"},
    {'I', "INT", "text-protocol opcode"},
    {'L', "LONG", "text-protocol opcode"},
    {'S', "STRING", "text-protocol opcode"},
    {'V', "UNICODE", "text-protocol opcode"},
    {'F', "FLOAT", "text-protocol opcode"},
    {'p', "PUT", "text-protocol opcode"},
    {'g', "GET", "text-protocol opcode"},
};

std::string refusal_text(uint8_t code) {
  for (const Refusal& r : kRefused)
    if (r.code == code) return std::string(r.what) + " (" + r.name + ") refused";
  static const char kHex[] = "0123456789abcdef";
  return std::string("unknown opcode 0x") + kHex[code >> 4] + kHex[code & 15];
}

// Index of the first byte that does not begin a well-formed UTF-8 sequence (overlong forms,
// surrogates and code points above U+10FFFF are not well formed), or npos when all are.
// Checked here because nlohmann's dump() throws on such strings long after parsing.
size_t invalid_utf8_at(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<uint8_t>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t extra;
    uint32_t cp, least;
    if ((c & 0xE0) == 0xC0) {
      extra = 1, cp = c & 0x1Fu, least = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
      extra = 2, cp = c & 0x0Fu, least = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
      extra = 3, cp = c & 0x07u, least = 0x10000;
    } else {
      return i;
    }
    if (s.size() - i <= extra) return i;
    for (size_t k = 1; k <= extra; ++k) {
      const auto b = static_cast<uint8_t>(s[i + k]);
      if ((b & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (b & 0x3Fu);
    }
    if (cp < least || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
    i += extra + 1;
  }
  return std::string_view::npos;
}

// "max_items (4194304)": a limit as messages name it.
std::string named(const char* limit, size_t value) {
  return std::string(limit) + " (" + std::to_string(value) + ")";
}

enum class Kind : uint8_t { kNone, kBool, kInt, kFloat, kStr, kList, kTuple, kDict };

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::kNone: return "None";
    case Kind::kBool: return "bool";
    case Kind::kInt: return "int";
    case Kind::kFloat: return "float";
    case Kind::kStr: return "str";
    case Kind::kList: return "list";
    case Kind::kTuple: return "tuple";
    case Kind::kDict: return "dict";
  }
  return "?";
}

bool is_container(Kind k) { return k == Kind::kList || k == Kind::kTuple || k == Kind::kDict; }

// One value in the arena. Stack, memo and containers hold arena indices, so a container
// memoized while empty and filled later is seen filled by every GET, as in Python.
//   bool/int/float: `a` holds the value's bits, `b` the opcode's offset;
//   str:            `a` is the text's offset in the input (strings are not copied), `b` its length;
//   containers:     `a` indexes Parser::slots_, `b` is the opcode's offset (for error messages).
struct Node {
  Kind kind = Kind::kNone;
  uint64_t a = 0;
  uint64_t b = 0;
};

class Parser {
 public:
  Parser(std::string_view in, const UnpickleLimits& limits)
      : in_(in), limits_(limits),
        cap_(std::min<size_t>(limits.max_items, std::numeric_limits<uint32_t>::max() - 1)) {}

  uint32_t parse();  // index of the value STOP returns

  std::string_view input() const { return in_; }
  const Node& node(uint32_t i) const { return nodes_[i]; }
  size_t node_count() const { return nodes_.size(); }
  const std::vector<uint32_t>& slots(const Node& container) const { return slots_[container.a]; }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw UnpickleError("offset " + std::to_string(op_pos_) + ": " + what);
  }
  bool step(uint8_t code);
  bool step_value(uint8_t code);

  std::string_view take(uint64_t n, const char* name);
  uint64_t read_le(size_t n, const char* name);

  uint32_t new_node(Kind kind, uint64_t a);
  uint32_t new_container(Kind kind);
  void add_slot(uint32_t container, uint32_t item);
  void require(uint32_t node, Kind kind, const char* name) const;
  void check_key(uint32_t key, const char* name) const;

  size_t frame_begin() const { return marks_.empty() ? 0 : marks_.back(); }
  void push(uint32_t node);
  uint32_t pop(const char* name);
  uint32_t top(const char* name) const;
  std::vector<uint32_t> take_marked(const char* name);

  void op_proto();
  void op_frame();
  void op_mark();
  void op_pop();
  void op_unicode(size_t len_bytes, const char* name);
  void op_long(size_t len_bytes, const char* name);
  void op_float();
  void op_sequence(Kind kind, const char* name);
  void op_tuple_n(size_t n, const char* name);
  void op_dict();
  void op_append();
  void op_appends();
  void op_setitem();
  void op_setitems();
  void fill_dict(uint32_t dict, const std::vector<uint32_t>& pairs, const char* name);
  void op_put(uint64_t index, const char* name);
  void op_get(uint64_t index, const char* name);
  uint32_t op_stop();

  std::string_view in_;
  const UnpickleLimits& limits_;
  const size_t cap_;  // max_items, kept within what a uint32_t index can address
  size_t pos_ = 0;     // next byte to read
  size_t op_pos_ = 0;  // offset of the opcode being executed
  std::vector<Node> nodes_;
  std::vector<std::vector<uint32_t>> slots_;  // elements of lists/tuples; key, value pairs of dicts
  size_t slot_count_ = 0;
  std::vector<uint32_t> stack_;
  std::vector<size_t> marks_;  // stack length at each open MARK
  std::unordered_map<uint64_t, uint32_t> memo_;
};

uint32_t Parser::parse() {
  if (in_.size() > limits_.max_bytes)
    fail("input of " + std::to_string(in_.size()) + " bytes exceeds max_bytes " +
         std::to_string(limits_.max_bytes));
  for (;;) {
    op_pos_ = pos_;
    if (pos_ >= in_.size()) fail("input ends without STOP");
    const auto code = static_cast<uint8_t>(in_[pos_++]);
    if (code == op::kStop) return op_stop();
    if (!step(code) && !step_value(code)) fail(refusal_text(code));
  }
}

// Opcodes that shape the stack, memo and containers; false when `code` is none of them.
bool Parser::step(uint8_t code) {
  switch (code) {
    case op::kProto: op_proto(); return true;
    case op::kFrame: op_frame(); return true;
    case op::kMark: op_mark(); return true;
    case op::kPop: op_pop(); return true;
    case op::kPopMark: take_marked("POP_MARK"); return true;
    case op::kDup: push(top("DUP")); return true;
    case op::kEmptyDict: push(new_container(Kind::kDict)); return true;
    case op::kEmptyList: push(new_container(Kind::kList)); return true;
    case op::kEmptyTuple: push(new_container(Kind::kTuple)); return true;
    case op::kTuple: op_sequence(Kind::kTuple, "TUPLE"); return true;
    case op::kTuple1: op_tuple_n(1, "TUPLE1"); return true;
    case op::kTuple2: op_tuple_n(2, "TUPLE2"); return true;
    case op::kTuple3: op_tuple_n(3, "TUPLE3"); return true;
    case op::kList: op_sequence(Kind::kList, "LIST"); return true;
    case op::kDict: op_dict(); return true;
    case op::kAppend: op_append(); return true;
    case op::kAppends: op_appends(); return true;
    case op::kSetitem: op_setitem(); return true;
    case op::kSetitems: op_setitems(); return true;
    case op::kBinput: op_put(read_le(1, "BINPUT"), "BINPUT"); return true;
    case op::kLongBinput: op_put(read_le(4, "LONG_BINPUT"), "LONG_BINPUT"); return true;
    case op::kMemoize: op_put(memo_.size(), "MEMOIZE"); return true;
    case op::kBinget: op_get(read_le(1, "BINGET"), "BINGET"); return true;
    case op::kLongBinget: op_get(read_le(4, "LONG_BINGET"), "LONG_BINGET"); return true;
    default: return false;
  }
}

// Opcodes that push one scalar; false when `code` is none of them.
bool Parser::step_value(uint8_t code) {
  switch (code) {
    case op::kNone: push(new_node(Kind::kNone, 0)); return true;
    case op::kNewtrue: push(new_node(Kind::kBool, 1)); return true;
    case op::kNewfalse: push(new_node(Kind::kBool, 0)); return true;
    case op::kBinint: {
      const auto v = static_cast<int32_t>(static_cast<uint32_t>(read_le(4, "BININT")));
      push(new_node(Kind::kInt, static_cast<uint64_t>(static_cast<int64_t>(v))));
      return true;
    }
    case op::kBinint1: push(new_node(Kind::kInt, read_le(1, "BININT1"))); return true;
    case op::kBinint2: push(new_node(Kind::kInt, read_le(2, "BININT2"))); return true;
    case op::kLong1: op_long(1, "LONG1"); return true;
    case op::kLong4: op_long(4, "LONG4"); return true;
    case op::kBinfloat: op_float(); return true;
    case op::kBinunicode: op_unicode(4, "BINUNICODE"); return true;
    case op::kShortBinunicode: op_unicode(1, "SHORT_BINUNICODE"); return true;
    case op::kBinunicode8: op_unicode(8, "BINUNICODE8"); return true;
    default: return false;
  }
}

std::string_view Parser::take(uint64_t n, const char* name) {
  if (n > in_.size() - pos_) fail(std::string("truncated ") + name);
  const std::string_view out = in_.substr(pos_, static_cast<size_t>(n));
  pos_ += static_cast<size_t>(n);
  return out;
}

uint64_t Parser::read_le(size_t n, const char* name) {
  const std::string_view b = take(n, name);
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= uint64_t{static_cast<uint8_t>(b[i])} << (8 * i);
  return v;
}

uint32_t Parser::new_node(Kind kind, uint64_t a) {
  if (nodes_.size() >= cap_) fail("more than " + named("max_items", limits_.max_items) + " values");
  nodes_.push_back(Node{kind, a, op_pos_});
  return static_cast<uint32_t>(nodes_.size() - 1);
}

uint32_t Parser::new_container(Kind kind) {
  const uint32_t n = new_node(kind, slots_.size());
  slots_.emplace_back();
  return n;
}

void Parser::add_slot(uint32_t container, uint32_t item) {
  if (slot_count_ >= cap_) fail("more than " + named("max_items", limits_.max_items) + " container slots");
  ++slot_count_;
  slots_[nodes_[container].a].push_back(item);
}

void Parser::require(uint32_t node, Kind kind, const char* name) const {
  const Kind got = nodes_[node].kind;
  if (got != kind) fail(std::string(name) + " on a " + kind_name(got) + ", not a " + kind_name(kind));
}

// JSON keys are text: scalars convert, a list or dict is unhashable in Python, and a tuple
// (hashable there) has no text form that json.dumps would accept either.
void Parser::check_key(uint32_t key, const char* name) const {
  const Kind k = nodes_[key].kind;
  if (k == Kind::kList || k == Kind::kDict)
    fail(std::string(name) + ": unhashable dict key (" + kind_name(k) + ")");
  if (k == Kind::kTuple) fail(std::string(name) + ": tuple as dict key has no JSON form");
}

void Parser::push(uint32_t node) {
  if (stack_.size() >= cap_) fail("stack longer than " + named("max_items", limits_.max_items));
  stack_.push_back(node);
}

// Values below the innermost MARK belong to the enclosing frame and are out of reach.
uint32_t Parser::pop(const char* name) {
  if (stack_.size() <= frame_begin()) fail(std::string(name) + " on an empty stack");
  const uint32_t v = stack_.back();
  stack_.pop_back();
  return v;
}

uint32_t Parser::top(const char* name) const {
  if (stack_.size() <= frame_begin()) fail(std::string(name) + " on an empty stack");
  return stack_.back();
}

// The values pushed since the innermost MARK, removing them and the mark.
std::vector<uint32_t> Parser::take_marked(const char* name) {
  if (marks_.empty()) fail(std::string(name) + " without a MARK");
  const size_t begin = marks_.back();
  marks_.pop_back();
  std::vector<uint32_t> items(stack_.begin() + static_cast<std::ptrdiff_t>(begin), stack_.end());
  stack_.resize(begin);
  return items;
}

void Parser::op_proto() {
  const uint64_t version = read_le(1, "PROTO");
  if (version > kHighestProtocol) fail("unsupported pickle protocol " + std::to_string(version));
}

// A frame only tells how much the writer buffered; its content is parsed like any other
// bytes. A length past the end means the file was cut.
void Parser::op_frame() {
  const uint64_t len = read_le(8, "FRAME");
  if (len > in_.size() - pos_) fail("truncated FRAME");
}

void Parser::op_mark() {
  if (marks_.size() >= limits_.max_depth)
    fail("MARK nested deeper than " + named("max_depth", limits_.max_depth));
  marks_.push_back(stack_.size());
}

// As in Python, POP with nothing above the innermost MARK discards the mark itself.
void Parser::op_pop() {
  if (stack_.size() > frame_begin()) {
    stack_.pop_back();
  } else if (!marks_.empty()) {
    marks_.pop_back();
  } else {
    fail("POP on an empty stack");
  }
}

void Parser::op_unicode(size_t len_bytes, const char* name) {
  const uint64_t len = read_le(len_bytes, name);
  const size_t offset = pos_;
  const std::string_view text = take(len, name);
  const size_t bad = invalid_utf8_at(text);
  if (bad != std::string_view::npos)
    fail(std::string("invalid UTF-8 in ") + name + " at byte " + std::to_string(offset + bad));
  const uint32_t n = new_node(Kind::kStr, offset);
  nodes_[n].b = len;
  push(n);
}

// Little-endian two's complement of 0 to 8 bytes; a wider int does not fit int64.
void Parser::op_long(size_t len_bytes, const char* name) {
  uint64_t len = read_le(len_bytes, name);
  if (len_bytes == 4 && (len >> 31) != 0) fail(std::string(name) + " with a negative length");
  if (len > 8) fail(std::string(name) + " of " + std::to_string(len) + " bytes exceeds 64 bits");
  uint64_t v = read_le(static_cast<size_t>(len), name);
  if (len > 0 && len < 8 && (v >> (8 * len - 1)) & 1) v |= ~uint64_t{0} << (8 * len);
  push(new_node(Kind::kInt, v));
}

void Parser::op_float() {
  const std::string_view b = take(8, "BINFLOAT");
  uint64_t bits = 0;
  for (char c : b) bits = (bits << 8) | static_cast<uint8_t>(c);  // big-endian
  push(new_node(Kind::kFloat, bits));
}

void Parser::op_sequence(Kind kind, const char* name) {
  const std::vector<uint32_t> items = take_marked(name);
  const uint32_t seq = new_container(kind);
  for (uint32_t item : items) add_slot(seq, item);
  push(seq);
}

void Parser::op_tuple_n(size_t n, const char* name) {
  uint32_t items[3];
  for (size_t i = n; i-- > 0;) items[i] = pop(name);
  const uint32_t tuple = new_container(Kind::kTuple);
  for (size_t i = 0; i < n; ++i) add_slot(tuple, items[i]);
  push(tuple);
}

void Parser::fill_dict(uint32_t dict, const std::vector<uint32_t>& pairs, const char* name) {
  if (pairs.size() % 2 != 0)
    fail(std::string(name) + " with an odd number of values (" + std::to_string(pairs.size()) + ")");
  for (size_t i = 0; i < pairs.size(); i += 2) check_key(pairs[i], name);
  for (uint32_t v : pairs) add_slot(dict, v);
}

void Parser::op_dict() {
  const std::vector<uint32_t> pairs = take_marked("DICT");
  const uint32_t dict = new_container(Kind::kDict);
  fill_dict(dict, pairs, "DICT");
  push(dict);
}

void Parser::op_append() {
  const uint32_t value = pop("APPEND");
  const uint32_t list = top("APPEND");
  require(list, Kind::kList, "APPEND");
  add_slot(list, value);
}

void Parser::op_appends() {
  const std::vector<uint32_t> items = take_marked("APPENDS");
  const uint32_t list = top("APPENDS");
  require(list, Kind::kList, "APPENDS");
  for (uint32_t item : items) add_slot(list, item);
}

void Parser::op_setitem() {
  const uint32_t value = pop("SETITEM");
  const uint32_t key = pop("SETITEM");
  const uint32_t dict = top("SETITEM");
  require(dict, Kind::kDict, "SETITEM");
  fill_dict(dict, {key, value}, "SETITEM");
}

void Parser::op_setitems() {
  const std::vector<uint32_t> pairs = take_marked("SETITEMS");
  const uint32_t dict = top("SETITEMS");
  require(dict, Kind::kDict, "SETITEMS");
  fill_dict(dict, pairs, "SETITEMS");
}

void Parser::op_put(uint64_t index, const char* name) {
  const uint32_t value = top(name);
  auto it = memo_.find(index);
  if (it != memo_.end()) {
    it->second = value;
    return;
  }
  if (memo_.size() >= cap_) fail("memo larger than " + named("max_items", limits_.max_items));
  memo_.emplace(index, value);
}

void Parser::op_get(uint64_t index, const char* name) {
  const auto it = memo_.find(index);
  if (it == memo_.end()) fail(std::string(name) + " of memo index " + std::to_string(index) + ", never PUT");
  push(it->second);
}

// Exactly one value and nothing after it: leftovers mean a malformed or concatenated file.
uint32_t Parser::op_stop() {
  if (!marks_.empty()) fail("STOP with " + std::to_string(marks_.size()) + " unmatched MARK");
  if (stack_.empty()) fail("STOP on an empty stack");
  if (stack_.size() > 1) fail("STOP leaves " + std::to_string(stack_.size()) + " values on the stack");
  if (pos_ != in_.size()) fail(std::to_string(in_.size() - pos_) + " trailing bytes after STOP");
  return stack_.back();
}

// Where an error about a value points: a string's node holds its text's offset, the others
// their opcode's.
uint64_t offset_of(const Node& n) { return n.kind == Kind::kStr ? n.a : n.b; }

[[noreturn]] void fail_at(const Node& n, const std::string& what) {
  throw UnpickleError("offset " + std::to_string(offset_of(n)) + ": " + what);
}

// The text json.dumps would write for a key of this type (check_key admitted only these).
std::string key_string(std::string_view input, const Node& n) {
  switch (n.kind) {
    case Kind::kStr: return std::string(input.substr(n.a, n.b));
    case Kind::kInt: return std::to_string(static_cast<int64_t>(n.a));
    case Kind::kBool: return n.a ? "true" : "false";
    case Kind::kNone: return "null";
    case Kind::kFloat: {
      const double d = std::bit_cast<double>(n.a);
      if (std::isnan(d)) return "NaN";
      if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
      return nlohmann::json(d).dump();
    }
    default: fail_at(n, std::string("internal: ") + kind_name(n.kind) + " as dict key");
  }
}

uint64_t saturating_add(uint64_t a, uint64_t b) {
  return b > std::numeric_limits<uint64_t>::max() - a ? std::numeric_limits<uint64_t>::max() : a + b;
}

// What the result would cost, computed on the arena before anything is built: the arena is a
// small graph whose shared parts the JSON repeats, so a few hundred bytes that fan out through
// the memo are refused here at once, not after building max_items nodes. Each container is
// sized once (iterative depth-first walk); one met again while still open contains itself.
class Sizer {
 public:
  Sizer(const Parser& parser, const UnpickleLimits& limits)
      : p_(parser), limits_(limits), state_(parser.node_count(), kUnseen), cost_(parser.node_count()) {}

  void check(uint32_t root);

 private:
  enum State : uint8_t { kUnseen, kOpen, kDone };
  struct Cost {
    uint64_t items = 0;  // JSON nodes
    uint64_t text = 0;   // bytes of string values and keys
  };
  struct Frame {
    uint32_t node;
    size_t next;  // next slot to account for
  };

  void add(Cost& to, const Cost& from) const {
    to.items = saturating_add(to.items, from.items);
    to.text = saturating_add(to.text, from.text);
  }
  Cost scalar_cost(const Node& n) const { return Cost{1, n.kind == Kind::kStr ? n.b : 0}; }
  void open(uint32_t index);
  void close();
  void visit_slot(Frame& f);

  const Parser& p_;
  const UnpickleLimits& limits_;
  std::vector<uint8_t> state_;
  std::vector<Cost> cost_;
  std::vector<Frame> frames_;
};

void Sizer::check(uint32_t root) {
  if (!is_container(p_.node(root).kind)) return;  // a scalar costs one node
  open(root);
  while (!frames_.empty()) {
    Frame& f = frames_.back();
    if (f.next >= p_.slots(p_.node(f.node)).size()) {
      close();
    } else {
      visit_slot(f);
    }
  }
}

void Sizer::open(uint32_t index) {
  state_[index] = kOpen;
  cost_[index] = Cost{1, 0};
  frames_.push_back(Frame{index, 0});
}

// A container's cost is final: check it against the limits, then add it to its parent's.
void Sizer::close() {
  const uint32_t index = frames_.back().node;
  frames_.pop_back();
  state_[index] = kDone;
  const Cost& c = cost_[index];
  const Node& n = p_.node(index);
  if (c.items > limits_.max_items)
    fail_at(n, "result has more than " + named("max_items", limits_.max_items) + " values");
  if (c.text > limits_.max_text_bytes)
    fail_at(n, "result has more than " + named("max_text_bytes", limits_.max_text_bytes) + " of text");
  if (!frames_.empty()) add(cost_[frames_.back().node], c);
}

void Sizer::visit_slot(Frame& f) {
  const Node& n = p_.node(f.node);
  const size_t slot = f.next++;
  const uint32_t child = p_.slots(n)[slot];
  const Node& c = p_.node(child);
  Cost& mine = cost_[f.node];
  if (n.kind == Kind::kDict && slot % 2 == 0) {  // a key: text only, no node of its own
    mine.text = saturating_add(mine.text, c.kind == Kind::kStr ? c.b : key_string(p_.input(), c).size());
  } else if (!is_container(c.kind)) {
    add(mine, scalar_cost(c));
  } else if (state_[child] == kDone) {
    add(mine, cost_[child]);
  } else if (state_[child] == kOpen) {
    fail_at(c, std::string(kind_name(c.kind)) + " contains itself");
  } else {
    open(child);  // `f` and `mine` may dangle from here on
  }
}

// Arena to nlohmann::json without recursion: an explicit stack of containers being filled.
// Shared values (memo GETs, DUP) are copied each time they are reached. Sizer has checked
// cycles and sizes already; the conversion still charges every copy against max_items and
// max_text_bytes and refuses a container reached while open, so that it is safe on its own.
// Only depth is first checked here: it depends on the path, not on the container.
class Converter {
 public:
  Converter(const Parser& parser, const UnpickleLimits& limits)
      : p_(parser), limits_(limits), open_(parser.node_count(), 0) {}

  nlohmann::json run(uint32_t root) {
    nlohmann::json result;
    place(root, result);
    while (!frames_.empty()) advance();
    return result;
  }

 private:
  struct Frame {
    uint32_t node;
    size_t next;  // next slot of the container to convert
    nlohmann::json* out;  // stays valid: only the innermost frame's container grows
  };

  [[noreturn]] void fail(const Node& at, const std::string& what) const { fail_at(at, what); }

  void charge_text(const Node& at, size_t len) {
    text_ += len;
    if (text_ > limits_.max_text_bytes)
      fail(at, "result has more than " + named("max_text_bytes", limits_.max_text_bytes) + " of text");
  }

  std::string_view text(const Node& n) const { return p_.input().substr(n.a, n.b); }

  void place(uint32_t index, nlohmann::json& out);
  void advance();
  void set_scalar(const Node& n, nlohmann::json& out);
  std::string key_text(const Node& n);

  const Parser& p_;
  const UnpickleLimits& limits_;
  std::vector<uint8_t> open_;  // per node: a frame for it is on frames_
  std::vector<Frame> frames_;
  size_t made_ = 0;  // JSON nodes produced
  size_t text_ = 0;  // bytes of text produced
};

void Converter::place(uint32_t index, nlohmann::json& out) {
  const Node& n = p_.node(index);
  if (++made_ > limits_.max_items)
    fail(n, "result has more than " + named("max_items", limits_.max_items) + " values");
  if (!is_container(n.kind)) {
    set_scalar(n, out);
    return;
  }
  if (open_[index]) fail(n, std::string(kind_name(n.kind)) + " contains itself");
  if (frames_.size() >= limits_.max_depth)
    fail(n, "containers nested deeper than " + named("max_depth", limits_.max_depth));
  out = n.kind == Kind::kDict ? nlohmann::json::object() : nlohmann::json::array();
  open_[index] = 1;
  frames_.push_back(Frame{index, 0, &out});
}

void Converter::advance() {
  Frame& f = frames_.back();
  const Node& n = p_.node(f.node);
  const std::vector<uint32_t>& slots = p_.slots(n);
  if (f.next >= slots.size()) {
    open_[f.node] = 0;
    frames_.pop_back();
    return;
  }
  if (n.kind == Kind::kDict) {
    const uint32_t key = slots[f.next], value = slots[f.next + 1];
    f.next += 2;
    // A repeated key keeps the last value, as a Python dict does.
    nlohmann::json& slot = (*f.out)[key_text(p_.node(key))];
    place(value, slot);  // may push a frame: `f` is not used after this
  } else {
    const uint32_t item = slots[f.next++];
    f.out->push_back(nullptr);
    place(item, f.out->back());
  }
}

void Converter::set_scalar(const Node& n, nlohmann::json& out) {
  switch (n.kind) {
    case Kind::kNone: out = nullptr; return;
    case Kind::kBool: out = n.a != 0; return;
    case Kind::kInt: out = static_cast<int64_t>(n.a); return;
    case Kind::kFloat: out = std::bit_cast<double>(n.a); return;
    case Kind::kStr:
      charge_text(n, n.b);
      out = std::string(text(n));
      return;
    default: fail(n, "internal: container where a scalar was expected");
  }
}

std::string Converter::key_text(const Node& n) {
  std::string k = key_string(p_.input(), n);
  charge_text(n, k.size());
  return k;
}

}  // namespace

nlohmann::json unpickle_plain(std::string_view bytes, const UnpickleLimits& limits) {
  try {
    Parser parser(bytes, limits);
    const uint32_t root = parser.parse();
    Sizer(parser, limits).check(root);
    return Converter(parser, limits).run(root);
  } catch (const UnpickleError&) {
    throw;
  } catch (const std::bad_alloc&) {
    throw UnpickleError("out of memory while unpickling");
  } catch (const std::exception& e) {  // nlohmann or the standard library: same contract
    throw UnpickleError(std::string("unpickle failed: ") + e.what());
  }
}

bool looks_like_pickle(std::string_view head) {
  return head.size() >= 2 && static_cast<uint8_t>(head[0]) == op::kProto && head[1] >= 2 &&
         head[1] <= kHighestProtocol;
}

}  // namespace culprit
