// The plain-data pickle reader (io/safe_unpickler.hpp): every supported type, memo semantics,
// refusal of class references and object construction, malformed and cut input, the size
// limits (memo repetition, nesting, recursion), and the real Flight Recorder dumps in
// shared/data when they are there. The pickles below were written by Python's pickle module
// (protocol 2 unless said otherwise) or built by hand where Python would not write them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "io/safe_unpickler.hpp"

namespace culprit {
namespace {

using namespace std::string_view_literals;
using nlohmann::json;

// The message of the UnpickleError `bytes` raises, or "" when it parses.
std::string error_of(std::string_view bytes, const UnpickleLimits& limits = {}) {
  try {
    unpickle_plain(bytes, limits);
  } catch (const UnpickleError& e) {
    return e.what();
  }
  return "";
}

#define EXPECT_REFUSED(bytes, part)                                      \
  do {                                                                   \
    const std::string msg_ = error_of(bytes);                           \
    EXPECT_NE(msg_.find(part), std::string::npos) << "message: " << msg_; \
  } while (0)

// Python: {"version": "2.9", "pg_config": {...}, "nccl_version": ..., "pg_status": {...},
// "entries": [three records sharing their keys and process_group tuple through BINGET]}.
constexpr std::string_view kFrLike =
        "\200\002}q\000(X\007\000\000\000versionq\001X\003\000\000\0002.9q\002X\011\000\000\000pg_con"
        "figq\003}q\004X\001\000\000\0000q\005}q\006(X\004\000\000\000nameq\007h\005X\004\000\000\000"
        "descq\010X\012\000\000\000default_pgq\011X\005\000\000\000ranksq\012X\006\000\000\000[0, 1]q"
        "\013usX\014\000\000\000nccl_versionq\014X\006\000\000\0002.27.3q\015X\011\000\000\000pg_stat"
        "usq\016}q\017h\005}q\020(X\030\000\000\000last_enqueued_collectiveq\021K\003X\027\000\000"
        "\000last_started_collectiveq\022K\002X\031\000\000\000last_completed_collectiveq\023K\002usX"
        "\007\000\000\000entriesq\024]q\025(}q\026(X\011\000\000\000record_idq\027K\000X\005\000\000"
        "\000pg_idq\030K\000X\015\000\000\000process_groupq\031h\005h\011\206q\032X\021\000\000\000co"
        "llective_seq_idq\033K\001X\016\000\000\000profiling_nameq\034X\017\000\000\000nccl:all_reduc"
        "eq\035X\013\000\000\000input_sizesq\036]q\037]q M\000\004aaX\005\000\000\000stateq!X\011\000"
        "\000\000completedq\"X\017\000\000\000time_created_nsq#\212\010\025lssQ\274g\030X\007\000\000"
        "\000retiredq$\210X\032\000\000\000time_discovered_started_nsq%NX\013\000\000\000duration_msq"
        "&G?\340\000\000\000\000\000\000u}q'(h\027K\001h\030K\000h\031h\032h\033K\002h\034h\035h\036]"
        "q(]q)M\000\004aah!h\"h#\212\010\026lssQ\274g\030h$\211h%Nh&G?\340\000\000\000\000\000\000u}q"
        "*(h\027K\002h\030K\000h\031h\032h\033K\003h\034h\035h\036]q+]q,M\000\004aah!X\011\000\000"
        "\000scheduledq-h#\212\010\027lssQ\274g\030h$\211h%Nh&G?\340\000\000\000\000\000\000ueu."sv;

constexpr const char* kFrLikeJson = R"({"entries": [
  {"collective_seq_id": 1, "duration_ms": 0.5, "input_sizes": [[1024]], "pg_id": 0,
   "process_group": ["0", "default_pg"], "profiling_name": "nccl:all_reduce", "record_id": 0,
   "retired": true, "state": "completed", "time_created_ns": 1758581237526785045,
   "time_discovered_started_ns": null},
  {"collective_seq_id": 2, "duration_ms": 0.5, "input_sizes": [[1024]], "pg_id": 0,
   "process_group": ["0", "default_pg"], "profiling_name": "nccl:all_reduce", "record_id": 1,
   "retired": false, "state": "completed", "time_created_ns": 1758581237526785046,
   "time_discovered_started_ns": null},
  {"collective_seq_id": 3, "duration_ms": 0.5, "input_sizes": [[1024]], "pg_id": 0,
   "process_group": ["0", "default_pg"], "profiling_name": "nccl:all_reduce", "record_id": 2,
   "retired": false, "state": "scheduled", "time_created_ns": 1758581237526785047,
   "time_discovered_started_ns": null}],
 "nccl_version": "2.27.3",
 "pg_config": {"0": {"desc": "default_pg", "name": "0", "ranks": "[0, 1]"}},
 "pg_status": {"0": {"last_completed_collective": 2, "last_enqueued_collective": 3,
                     "last_started_collective": 2}},
 "version": "2.9"})";

TEST(SafeUnpickler, Scalars) {
  EXPECT_TRUE(unpickle_plain("\200\002N."sv).is_null());
  EXPECT_EQ(unpickle_plain("\200\002\210."sv), json(true));
  EXPECT_EQ(unpickle_plain("\200\002\211."sv), json(false));
  EXPECT_EQ(unpickle_plain("\200\002G?\370\000\000\000\000\000\000."sv), json(1.5));
  EXPECT_EQ(unpickle_plain("\200\002G\275\356\354{\325\022\265r."sv), json(-2.25e-10));
  EXPECT_TRUE(unpickle_plain("\200\002G?\370\000\000\000\000\000\000."sv).is_number_float());
}

TEST(SafeUnpickler, Integers) {
  const std::pair<std::string_view, int64_t> cases[] = {
      {"\200\002K\000."sv, 0},
      {"\200\002K\377."sv, 255},
      {"\200\002M\000\001."sv, 256},
      {"\200\002M\377\377."sv, 65535},
      {"\200\002J\000\000\001\000."sv, 65536},
      {"\200\002J\377\377\377\377."sv, -1},
      {"\200\002J\000\000\000\200."sv, INT64_C(-2147483648)},
      {"\200\002\212\005\000\000\000\200\000."sv, INT64_C(2147483648)},
      {"\200\002\212\010\377\377\377\377\377\377\377\177."sv, INT64_MAX},
      {"\200\002\212\010\000\000\000\000\000\000\000\200."sv, INT64_MIN},
      {"\200\002\212\000."sv, 0},
      {"\200\002\212\002\000\200."sv, -32768},
      {"\200\002\213\002\000\000\000\000\001."sv, 256},  // LONG4
  };
  for (const auto& [bytes, want] : cases) {
    const json v = unpickle_plain(bytes);
    EXPECT_TRUE(v.is_number_integer()) << want;
    EXPECT_EQ(v.get<int64_t>(), want);
  }
  EXPECT_REFUSED("\200\002\212\011\000\000\000\000\000\000\000\200\000."sv,
                 "LONG1 of 9 bytes exceeds 64 bits");
  EXPECT_REFUSED("\200\002\213\377\377\377\377."sv, "LONG4 with a negative length");
}

TEST(SafeUnpickler, Strings) {
  EXPECT_EQ(unpickle_plain("\200\002X\005\000\000\000helloq\000."sv), json("hello"));
  EXPECT_EQ(unpickle_plain("\200\002X\000\000\000\000q\000."sv), json(""));
  const json u = unpickle_plain(
      "\200\002X\017\000\000\000h\303\251llo \342\234\223 \360\237\230\200q\000."sv);
  EXPECT_EQ(u, json("h\u00e9llo \u2713 \U0001F600"));
  EXPECT_NO_THROW(u.dump());
  EXPECT_EQ(unpickle_plain("\200\004\214\002hi."sv), json("hi"));  // SHORT_BINUNICODE
  EXPECT_EQ(unpickle_plain("\200\004\215\002\000\000\000\000\000\000\000hi."sv), json("hi"));   // BINUNICODE8
}

// Invalid UTF-8 is refused (not replaced), so that dump() can never throw on a result.
TEST(SafeUnpickler, InvalidUtf8Refused) {
  EXPECT_REFUSED("\200\002X\001\000\000\000\377."sv, "invalid UTF-8 in BINUNICODE at byte 7");
  EXPECT_REFUSED("\200\002X\002\000\000\000\300\257."sv, "invalid UTF-8");      // overlong '/'
  EXPECT_REFUSED("\200\002X\003\000\000\000\355\240\200."sv, "invalid UTF-8");  // surrogate
  EXPECT_REFUSED("\200\002X\002\000\000\000\342\234."sv, "invalid UTF-8");      // cut sequence
  EXPECT_REFUSED("\200\002X\004\000\000\000\364\220\200\200."sv, "invalid UTF-8");  // > U+10FFFF
  EXPECT_REFUSED("\200\004\214\001\200."sv, "invalid UTF-8 in SHORT_BINUNICODE");
}

TEST(SafeUnpickler, ListsTuplesAndDicts) {
  // [(), (1,), (1, 2), (1, 2, 3), (1, 2, 3, 4)]: EMPTY_TUPLE, TUPLE1-3 and MARK ... TUPLE.
  const json t = unpickle_plain(

          "\200\002]q\000()K\001\205q\001K\001K\002\206q\002K\001K\002K\003\207q\003(K\001K\002K\003K"
          "\004tq\004e."sv);
  EXPECT_EQ(t, json::parse("[[], [1], [1, 2], [1, 2, 3], [1, 2, 3, 4]]"));
  EXPECT_EQ(unpickle_plain("\200\002(K\001K\002l."sv), json::parse("[1, 2]"));           // LIST
  EXPECT_EQ(unpickle_plain("\200\002(X\001\000\000\000aK\001d."sv), json::parse(R"({"a": 1})"));  // DICT
  EXPECT_EQ(unpickle_plain("\200\002]."sv), json::array());
  EXPECT_EQ(unpickle_plain("\200\002}."sv), json::object());
  EXPECT_EQ(unpickle_plain("\200\002)."sv), json::array());
}

TEST(SafeUnpickler, NonStringKeysBecomeText) {
  // {1: 'i', None: 'n', 2.5: 'f', False: 'b', -7: 'neg'}, as json.dumps writes it.
  const json d = unpickle_plain(

          "\200\002}q\000(K\001X\001\000\000\000iq\001NX\001\000\000\000nq\002G@\004\000\000\000\000"
          "\000\000X\001\000\000\000fq\003\211X\001\000\000\000bq\004J\371\377\377\377X\003\000\000"
          "\000negq\005u."sv);
  EXPECT_EQ(d, json::parse(R"({"1": "i", "null": "n", "2.5": "f", "false": "b", "-7": "neg"})"));
  // A key set twice keeps its last value, as in Python.
  EXPECT_EQ(unpickle_plain("\200\002}(X\001\000\000\000aK\001X\001\000\000\000aK\002u."sv),
            json::parse(R"({"a": 2})"));
}

TEST(SafeUnpickler, Protocols4And5WithFramesAndMemoize) {
  // {'a': [1, 'x', 'x'], 'b': (None,)} at protocol 4: FRAME, MEMOIZE, SHORT_BINUNICODE, BINGET.
  EXPECT_EQ(unpickle_plain(

                    "\200\004\225\034\000\000\000\000\000\000\000}\224(\214\001a\224]\224(K\001\214"
                    "\001x\224h\003e\214\001b\224N\205\224u."sv),
            json::parse(R"({"a": [1, "x", "x"], "b": [null]})"));
  EXPECT_EQ(unpickle_plain(
      "\200\005\225\026\000\000\000\000\000\000\000]\224(\214\005short\224G@\000\000\000\000\000\000"
      "\000e."sv),
            json::parse(R"(["short", 2.0])"));
  EXPECT_REFUSED("\200\004\225\377\000\000\000\000\000\000\000N."sv, "offset 2: truncated FRAME");
}

TEST(SafeUnpickler, FlightRecorderLikeDictWithRepeatedKeys) {
  const json d = unpickle_plain(kFrLike);
  EXPECT_EQ(d, json::parse(kFrLikeJson));
  EXPECT_EQ(d["entries"][2]["record_id"], 2);
  EXPECT_EQ(d["entries"][1]["process_group"], json::parse(R"(["0", "default_pg"])"));
}

// A GET sees the container as it is when read, not as it was at PUT: filled after the PUT,
// and mutated through a GET after being placed in another container.
TEST(SafeUnpickler, MemoHoldsTheContainerItself) {
  // outer = []; inner = []; outer.append(inner); memo[1].append(7)  ->  [[7]]
  EXPECT_EQ(unpickle_plain("\200\002]q\000]q\001ah\001K\007a0."sv), json::parse("[[7]]"));
  // DUP shares the list too: [] DUP 1 APPEND POP  ->  [1]
  EXPECT_EQ(unpickle_plain("\200\002]2K\001a0."sv), json::parse("[1]"));
  // LONG_BINPUT 256 / LONG_BINGET 256 of a list, then TUPLE2  ->  [[1], [1]]
  EXPECT_EQ(unpickle_plain("\200\002]r\000\001\000\000K\001aj\000\001\000\000\206."sv),
            json::parse("[[1], [1]]"));
}

TEST(SafeUnpickler, PopAndPopMark) {
  EXPECT_TRUE(unpickle_plain("\200\002N(K\001K\0021."sv).is_null());  // POP_MARK drops 1, 2
  EXPECT_TRUE(unpickle_plain("\200\002(0N."sv).is_null());           // POP of an empty frame drops the MARK
  EXPECT_EQ(unpickle_plain("\200\002NK\0010."sv), json(nullptr));
}

TEST(SafeUnpickler, ClassReferencesRefused) {
  // collections.OrderedDict() at protocol 2: GLOBAL then REDUCE.
  EXPECT_EQ(error_of("\200\002ccollections\012OrderedDict\012q\000)Rq\001."sv),
            "offset 2: class reference (GLOBAL) refused");
  // datetime.date(2020, 1, 1) at protocol 2.
  EXPECT_REFUSED(

          "\200\002cdatetime\012date\012q\000c_codecs\012encode\012q\001X\005\000\000\000\007\303\244"
          "\001\001q\002X\006\000\000\000latin1q\003\206q\004Rq\005\205q\006Rq\007."sv,
      "offset 2: class reference (GLOBAL) refused");
  // collections.OrderedDict() at protocol 4: STACK_GLOBAL.
  EXPECT_REFUSED(

          "\200\004\225\"\000\000\000\000\000\000\000\214\013collections\224\214\013OrderedDict\224"
          "\223\224)R\224."sv,
      "offset 39: class reference (STACK_GLOBAL) refused");
  EXPECT_EQ(error_of("\200\002))R."sv), "offset 4: call (REDUCE) refused");
}

TEST(SafeUnpickler, EveryObjectOpcodeRefused) {
  const std::pair<char, const char*> refused[] = {
      {'c', "GLOBAL"}, {'\223', "STACK_GLOBAL"}, {'R', "REDUCE"}, {'b', "BUILD"}, {'i', "INST"},
      {'o', "OBJ"}, {'\201', "NEWOBJ"}, {'\222', "NEWOBJ_EX"}, {'\202', "EXT1"}, {'\203', "EXT2"},
      {'\204', "EXT4"}, {'P', "PERSID"}, {'Q', "BINPERSID"}, {'C', "SHORT_BINBYTES"},
      {'B', "BINBYTES"}, {'\216', "BINBYTES8"}, {'\226', "BYTEARRAY8"}, {'\217', "EMPTY_SET"},
      {'\221', "FROZENSET"}, {'\227', "NEXT_BUFFER"}, {'I', "INT"}, {'S', "STRING"}, {'V', "UNICODE"},
      {'F', "FLOAT"}, {'p', "PUT"}, {'g', "GET"}, {'L', "LONG"}, {'T', "BINSTRING"}};
  for (const auto& [code, name] : refused) {
    std::string bytes = "\200\002N";
    bytes += code;
    bytes += "N.";
    const std::string msg = error_of(bytes);
    EXPECT_TRUE(msg.starts_with("offset 3: ")) << msg;
    EXPECT_NE(msg.find(std::string("(") + name + ") refused"), std::string::npos) << msg;
  }
  EXPECT_REFUSED("\200\003C\002abq\000."sv, "offset 2: bytes (no JSON form) (SHORT_BINBYTES) refused");
  EXPECT_REFUSED("\200\004\225\007\000\000\000\000\000\000\000\217\224(K\001\220."sv, "(EMPTY_SET) refused");
  EXPECT_REFUSED("I1\012."sv, "offset 0: text-protocol opcode (INT) refused");
  EXPECT_REFUSED("\200\002\377."sv, "offset 2: unknown opcode 0xff");
  EXPECT_REFUSED("\200\006N."sv, "offset 0: unsupported pickle protocol 6");
}

TEST(SafeUnpickler, MalformedStacksRefused) {
  EXPECT_EQ(error_of(""sv), "offset 0: input ends without STOP");
  EXPECT_EQ(error_of("\200\002N"sv), "offset 3: input ends without STOP");
  EXPECT_EQ(error_of("\200\002X\005\000\000\000he"sv), "offset 2: truncated BINUNICODE");
  EXPECT_REFUSED("\200\002NN."sv, "STOP leaves 2 values on the stack");
  EXPECT_REFUSED("\200\002."sv, "STOP on an empty stack");
  EXPECT_REFUSED("\200\002(N."sv, "STOP with 1 unmatched MARK");
  EXPECT_REFUSED("\200\002N.N"sv, "1 trailing bytes after STOP");
  EXPECT_REFUSED("\200\002}(Nu."sv, "SETITEMS with an odd number of values");
  EXPECT_REFUSED("\200\002(Nd."sv, "DICT with an odd number of values");
  EXPECT_REFUSED("\200\002]NNs."sv, "SETITEM on a list, not a dict");
  EXPECT_REFUSED("\200\002](NNu."sv, "SETITEMS on a list, not a dict");
  EXPECT_REFUSED("\200\002}Na."sv, "APPEND on a dict, not a list");
  EXPECT_REFUSED("\200\002)Na."sv, "APPEND on a tuple, not a list");
  EXPECT_REFUSED("\200\002}(Ne."sv, "APPENDS on a dict, not a list");
  EXPECT_REFUSED("\200\002]e."sv, "APPENDS without a MARK");
  EXPECT_REFUSED("\200\002](Na."sv, "APPEND on an empty stack");  // the MARK hides the list
  EXPECT_REFUSED("\200\002Na."sv, "APPEND on an empty stack");
  EXPECT_REFUSED("\200\002h\005."sv, "BINGET of memo index 5, never PUT");
  EXPECT_REFUSED("\200\002q\000."sv, "BINPUT on an empty stack");
  EXPECT_REFUSED("\200\0020N."sv, "POP on an empty stack");
  EXPECT_REFUSED("\200\0022."sv, "DUP on an empty stack");
  EXPECT_REFUSED("\200\002K\001\206."sv, "TUPLE2 on an empty stack");
  EXPECT_REFUSED("\200\004\215\377\377\377\377\377\377\377\377hi."sv, "truncated BINUNICODE8");
}

TEST(SafeUnpickler, UnhashableAndTupleKeysRefused) {
  EXPECT_REFUSED("\200\002}]Ns."sv, "SETITEM: unhashable dict key (list)");
  EXPECT_REFUSED("\200\002}}Ns."sv, "SETITEM: unhashable dict key (dict)");
  EXPECT_REFUSED("\200\002}(]Nu."sv, "SETITEMS: unhashable dict key (list)");
  EXPECT_REFUSED("\200\002(]Nd."sv, "DICT: unhashable dict key (list)");
  EXPECT_REFUSED("\200\002})Ns."sv, "tuple as dict key has no JSON form");
}

TEST(SafeUnpickler, TruncationAtEveryByteRefused) {
  for (size_t n = 0; n < kFrLike.size(); ++n)
    EXPECT_THROW(unpickle_plain(kFrLike.substr(0, n)), UnpickleError) << "prefix of " << n << " bytes";
}

// Any byte changed to any of a few opcode-like values either parses or is refused cleanly.
TEST(SafeUnpickler, CorruptedBytesNeverEscapeAsOtherErrors) {
  const char replacements[] = {'\000', '\377', '(', '.', 'h', 'X', 'a', 'u', '\212', '\225'};
  size_t refused = 0;
  for (size_t i = 0; i < kFrLike.size(); ++i) {
    for (char r : replacements) {
      std::string bytes(kFrLike);
      bytes[i] = r;
      try {
        unpickle_plain(bytes).dump();
      } catch (const UnpickleError&) {
        ++refused;
      }
    }
  }
  EXPECT_GT(refused, 0u);
}

TEST(SafeUnpickler, InputLargerThanMaxBytesRefused) {
  UnpickleLimits limits;
  limits.max_bytes = 3;
  EXPECT_EQ(error_of("\200\002N."sv, limits), "offset 0: input of 4 bytes exceeds max_bytes 3");
}

// L0 = [None]; L(i) = [L(i-1), L(i-1)] through BINGET, `doublings` times: a few dozen bytes
// whose JSON has 2^doublings leaves.
std::string billion_laughs(int doublings, std::string_view leaf) {
  std::string b = "\200\002]q";
  b += '\000';
  b += leaf;
  b += "a";
  for (int i = 1; i <= doublings; ++i) {
    b += "0(h";
    b += static_cast<char>(i - 1);
    b += 'h';
    b += static_cast<char>(i - 1);
    b += "lq";
    b += static_cast<char>(i);
  }
  return b + ".";
}

TEST(SafeUnpickler, MemoRepetitionBoundedByMaxItems) {
  const json small = unpickle_plain(billion_laughs(3, "N"));
  EXPECT_EQ(small.dump(), "[[[[null],[null]],[[null],[null]]],[[[null],[null]],[[null],[null]]]]");
  UnpickleLimits limits;
  limits.max_items = 10000;
  EXPECT_NE(error_of(billion_laughs(40, "N"), limits).find("result has more than max_items (10000) values"),
            std::string::npos);
  // The default limit holds too (4 Mi nodes), without trying 2^40.
  EXPECT_NE(error_of(billion_laughs(40, "N")).find("more than max_items"), std::string::npos);
}

TEST(SafeUnpickler, MemoRepetitionOfTextBoundedByMaxTextBytes) {
  const std::string long_text(1000, 'x');
  std::string leaf = "X";
  leaf += std::string("\350\003\000\000", 4);  // 1000, little-endian
  leaf += long_text;
  UnpickleLimits limits;
  limits.max_text_bytes = 1u << 20;
  EXPECT_NE(error_of(billion_laughs(30, leaf), limits).find("more than max_text_bytes (1048576)"),
            std::string::npos);
  const json ok = unpickle_plain(billion_laughs(5, leaf), limits);  // 32 copies: 32 kB of text
  EXPECT_EQ(ok[0][0][0][0][0][0], json(long_text));
}

// `depth` empty lists pushed flat, then APPENDed into each other: no MARK involved.
std::string nested_lists(size_t depth) {
  return "\200\002" + std::string(depth, ']') + std::string(depth - 1, 'a') + ".";
}

TEST(SafeUnpickler, NestingBoundedByMaxDepth) {
  EXPECT_NO_THROW(unpickle_plain(nested_lists(64)));
  EXPECT_REFUSED(nested_lists(65), "containers nested deeper than max_depth (64)");
  EXPECT_REFUSED(nested_lists(200000), "containers nested deeper than max_depth (64)");
  // MARKs nested as Python writes nested lists: ((((N l l l l
  const auto marked = [](size_t depth) {
    return "\200\002" + std::string(depth, '(') + "N" + std::string(depth, 'l') + ".";
  };
  EXPECT_NO_THROW(unpickle_plain(marked(64)));
  EXPECT_REFUSED(marked(65), "offset 66: MARK nested deeper than max_depth (64)");
}

// The conversion keeps its own stack: a raised max_depth does not turn into deep recursion.
TEST(SafeUnpickler, DeepNestingWithinLimitNeedsNoRecursion) {
  UnpickleLimits limits;
  limits.max_depth = 1u << 20;
  const json v = unpickle_plain(nested_lists(200000), limits);
  size_t depth = 1;
  for (const json* p = &v; !p->empty(); p = &(*p)[0]) ++depth;
  EXPECT_EQ(depth, 200000u);
}

TEST(SafeUnpickler, RecursiveContainersRefused) {
  EXPECT_REFUSED("\200\002]q\000h\000a."sv, "offset 2: list contains itself");       // L.append(L)
  EXPECT_REFUSED("\200\002}q\000X\001\000\000\000kh\000s."sv, "dict contains itself");  // d['k'] = d
  EXPECT_REFUSED("\200\002]q\000]q\001h\000aa."sv, "list contains itself");          // a = [b], b = [a]
  EXPECT_REFUSED("\200\002]q\000h\000\205q\001a."sv, "list contains itself");        // L = [(L,)]
  // Shared but not recursive is fine: [a, a].
  EXPECT_EQ(unpickle_plain("\200\002]q\000]q\0010h\001h\001\206a."sv), json::parse("[[[], []]]"));
}

TEST(SafeUnpickler, LooksLikePickle) {
  EXPECT_TRUE(looks_like_pickle("\200\002}q"sv));
  EXPECT_TRUE(looks_like_pickle("\200\005"sv));
  EXPECT_FALSE(looks_like_pickle("\200\001"sv));
  EXPECT_FALSE(looks_like_pickle("\200\006"sv));
  EXPECT_FALSE(looks_like_pickle("\200"sv));
  EXPECT_FALSE(looks_like_pickle(""sv));
  EXPECT_FALSE(looks_like_pickle("{\"version\": 1}"sv));
}

// ---- the real dumps (shared/data/flight-recorder/nvrx, not in the repository) ----

std::filesystem::path fr_data_dir() {
  if (const char* env = std::getenv("CULPRIT_FR_DATA_DIR"); env != nullptr && *env != '\0') return env;
  // Lexically: tests/data need not exist for the path through it to be meaningful.
  return std::filesystem::path(CULPRIT_TEST_DATA_DIR "/../../../shared/data/flight-recorder/nvrx")
      .lexically_normal();
}

std::vector<std::filesystem::path> real_dumps(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> out;
  std::error_code ec;
  for (const auto& run : std::filesystem::directory_iterator(dir, ec)) {
    if (!run.is_directory()) continue;
    for (const auto& f : std::filesystem::directory_iterator(run.path(), ec))
      if (f.is_regular_file() && f.path().filename().string().starts_with("_dump_")) out.push_back(f.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(SafeUnpicklerRealDumps, ParseWithTopLevelKeys) {
  const auto dir = fr_data_dir();
  const auto dumps = real_dumps(dir);
  if (dumps.empty()) GTEST_SKIP() << "real Flight Recorder dumps not found at " << dir << " (shared data, not part of the repo)";
  for (const auto& path : dumps) {
    const std::string bytes = slurp(path);
    EXPECT_TRUE(looks_like_pickle(bytes)) << path;
    json d;
    ASSERT_NO_THROW(d = unpickle_plain(bytes)) << path << ": " << error_of(bytes);
    ASSERT_TRUE(d.is_object()) << path;
    for (const char* key : {"version", "pg_config", "pg_status"})
      EXPECT_TRUE(d.contains(key)) << path << " " << key;
    EXPECT_NO_THROW(d.dump()) << path;
  }
}

TEST(SafeUnpicklerRealDumps, TruncationAtEveryByteRefused) {
  const auto dir = fr_data_dir();
  const auto dumps = real_dumps(dir);
  if (dumps.empty()) GTEST_SKIP() << "real Flight Recorder dumps not found at " << dir << " (shared data, not part of the repo)";
  const std::string bytes = slurp(dumps.front());
  ASSERT_NO_THROW(unpickle_plain(bytes));
  size_t refused = 0;
  for (size_t n = 0; n < bytes.size(); ++n) {
    try {
      unpickle_plain(std::string_view(bytes).substr(0, n));
    } catch (const UnpickleError&) {
      ++refused;
    }
  }
  EXPECT_EQ(refused, bytes.size()) << dumps.front();
}

}  // namespace
}  // namespace culprit
