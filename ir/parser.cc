// IR text parser: a recursive-descent parser over ir/lexer.h tokens, one function per grammar
// rule of docs/IR.md. It builds the graph as it reads, checking each node against the op table
// and its written result types against the shape function, then runs the verifier.
#include "ir/parser.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "ir/error.h"
#include "ir/lexer.h"
#include "ir/op_registry.h"
#include "ir/verifier.h"

namespace kiln {
namespace {

// Element counts of parsed types stay below this, so byte sizes (up to 8 bytes an element)
// and the shape functions' products never overflow int64.
constexpr int64_t kMaxElements = std::numeric_limits<int64_t>::max() / 16;

// A value name as written: %x and %"x" name the same value; %12 is the unnamed value the
// printer numbered 12 (a name of digits only is written in quotes).
struct ValueRef {
  Token token;
  bool numbered() const {
    return !token.quoted && !token.text.empty() && token.text[0] >= '0' && token.text[0] <= '9';
  }
  std::string key() const { return numbered() ? "#" + token.text : "%" + token.text; }
};

class Parser {
 public:
  Parser(std::string_view text, const std::string& filename) : lexer_(text, filename) {}

  std::unique_ptr<Graph> parse() {
    graph_ = std::make_unique<Graph>();
    parse_signature();
    while (!is_ident("return")) parse_statement();
    parse_return();
    expect(TokenKind::kRBrace, "to close the graph");
    if (lexer_.peek().kind != TokenKind::kEnd) {
      fail("unexpected " + token_description(lexer_.peek()) + " after the graph");
    }
    return std::move(graph_);
  }

 private:
  // --- Token helpers -------------------------------------------------------------------------

  [[noreturn]] void fail(const std::string& message) const {
    lexer_.fail_at(lexer_.peek(), message);
  }

  bool is(TokenKind kind) const { return lexer_.peek().kind == kind; }
  bool is_ident(std::string_view word) const {
    return is(TokenKind::kIdent) && lexer_.peek().text == word;
  }
  bool accept(TokenKind kind) {
    if (!is(kind)) return false;
    lexer_.take();
    return true;
  }
  Token expect(TokenKind kind, const std::string& context) {
    if (!is(kind)) {
      fail("expected " + token_kind_description(kind) + " " + context + ", found " +
           token_description(lexer_.peek()));
    }
    return lexer_.take();
  }
  void expect_keyword(std::string_view word, const std::string& context) {
    if (!is_ident(word)) {
      fail("expected '" + std::string(word) + "' " + context + ", found " +
           token_description(lexer_.peek()));
    }
    lexer_.take();
  }

  // Parses `item` repeatedly, separated by commas, until the closing token (consumed).
  template <class Item>
  void parse_list_until(TokenKind close, const std::string& context, Item item) {
    if (accept(close)) return;
    do {
      item();
    } while (accept(TokenKind::kComma));
    expect(close, context);
  }

  // --- Values --------------------------------------------------------------------------------

  ValueRef expect_value_name(const std::string& context) {
    ValueRef ref{expect(TokenKind::kValueName, context)};
    if (ref.token.quoted && ref.token.text.empty()) {
      lexer_.fail_at(ref.token, "a value name cannot be empty");
    }
    return ref;
  }

  // Makes sure `ref` names no value yet (nor another result of the same statement).
  void check_new(const ValueRef& ref, const std::set<std::string>& pending = {}) {
    if (values_.count(ref.key()) || pending.count(ref.key())) {
      lexer_.fail_at(ref.token, "redefinition of " + token_description(ref.token));
    }
  }

  void define(const ValueRef& ref, Value* value) {
    value->set_name(ref.numbered() ? "" : ref.token.text);
    values_[ref.key()] = value;
  }

  Value* parse_operand(const std::string& context) {
    ValueRef ref = expect_value_name(context);
    auto found = values_.find(ref.key());
    if (found == values_.end()) {
      lexer_.fail_at(ref.token, "use of undefined value " + token_description(ref.token));
    }
    return found->second;
  }

  // --- Types ---------------------------------------------------------------------------------

  TensorType parse_type(const std::string& context) {
    Token dtype_token = expect(TokenKind::kIdent, context);
    std::optional<DType> dtype = parse_dtype(dtype_token.text);
    if (!dtype) lexer_.fail_at(dtype_token, "unknown dtype '" + dtype_token.text + "'");
    TensorType type{*dtype, {}};
    expect(TokenKind::kLBracket, "after the dtype of a type");
    int64_t size_bound = 1;
    parse_list_until(TokenKind::kRBracket, "to close the shape", [&] {
      Token dim_token = lexer_.peek();
      const int64_t dim = parse_integer("as a dimension");
      if (dim < 0) lexer_.fail_at(dim_token, "dimension " + std::to_string(dim) + " is negative");
      // Zero dims are left out of the bound, so products of the other dims stay in range too.
      if (dim > 1 && size_bound > kMaxElements / dim) {
        lexer_.fail_at(dim_token, "type has too many elements (overflow at dimension " +
                                      std::to_string(dim) + ")");
      }
      size_bound *= std::max<int64_t>(dim, 1);
      type.shape.push_back(dim);
    });
    return type;
  }

  // --- Numbers -------------------------------------------------------------------------------

  // An optionally negative integer literal.
  int64_t parse_integer(const std::string& context) {
    const bool negative = accept(TokenKind::kMinus);
    Token token = lexer_.peek();
    if (!is(TokenKind::kNumber)) {
      fail("expected an integer " + context + ", found " + token_description(token));
    }
    if (token.text.find_first_not_of("0123456789") != std::string::npos) {
      fail("expected an integer " + context + ", found " + token_description(token));
    }
    lexer_.take();
    const std::string spelled = (negative ? "-" : "") + token.text;
    int64_t value = 0;
    const auto result = std::from_chars(spelled.data(), spelled.data() + spelled.size(), value);
    if (result.ec != std::errc() || result.ptr != spelled.data() + spelled.size()) {
      lexer_.fail_at(token, "integer " + spelled + " is out of range");
    }
    return value;
  }

  // An optionally negative real literal, or nan / inf. With `require_float_spelling`, a plain
  // integer like `1` is refused (float attributes are written `1.0`).
  template <class Real>
  Real parse_real(const std::string& context, bool require_float_spelling) {
    const bool negative = accept(TokenKind::kMinus);
    Token token = lexer_.peek();
    if (is_ident("nan") || is_ident("inf")) {
      lexer_.take();
      if (token.text == "nan") {
        if (negative) lexer_.fail_at(token, "write nan without a sign");
        return std::numeric_limits<Real>::quiet_NaN();
      }
      return negative ? -std::numeric_limits<Real>::infinity()
                      : std::numeric_limits<Real>::infinity();
    }
    if (!is(TokenKind::kNumber)) {
      fail("expected a number " + context + ", found " + token_description(token));
    }
    if (require_float_spelling && token.text.find_first_of(".eE") == std::string::npos) {
      fail("expected a float " + context + " (with a '.' or an exponent, as " + token.text +
           ".0), found " + token_description(token));
    }
    lexer_.take();
    const std::string spelled = (negative ? "-" : "") + token.text;
    Real value = 0;
    const auto result = std::from_chars(spelled.data(), spelled.data() + spelled.size(), value);
    if (result.ec != std::errc() || result.ptr != spelled.data() + spelled.size()) {
      lexer_.fail_at(token, "number " + spelled + " is out of range");
    }
    return value;
  }

  // --- Tensor data ---------------------------------------------------------------------------

  // One element of a tensor of `dtype`, as the compute type of ir/tensor.h: bool and integers
  // as int64, floats as double (an f32 / f16 / bf16 literal is read as float, then widened).
  struct Element {
    int64_t integer = 0;
    double real = 0;
  };

  Element parse_element(DType dtype) {
    const std::string context = "in " + std::string(dtype_name(dtype)) + " data";
    Element element;
    if (dtype == DType::kBool) {
      if (!is_ident("true") && !is_ident("false")) {
        fail("expected true or false " + context + ", found " + token_description(lexer_.peek()));
      }
      element.integer = lexer_.take().text == "true";
    } else if (dtype == DType::kF64) {
      element.real = parse_real<double>(context, false);
    } else if (is_float(dtype)) {
      element.real = parse_real<float>(context, false);
    } else {
      Token token = lexer_.peek();
      element.integer = parse_integer(context);
      if (!fits(dtype, element.integer)) {
        lexer_.fail_at(token, "value " + std::to_string(element.integer) + " does not fit in " +
                                  std::string(dtype_name(dtype)));
      }
    }
    return element;
  }

  static bool fits(DType dtype, int64_t value) {
    switch (dtype) {
      case DType::kI32:
        return value >= std::numeric_limits<int32_t>::min() &&
               value <= std::numeric_limits<int32_t>::max();
      case DType::kI8:
        return value >= -128 && value <= 127;
      case DType::kU8:
        return value >= 0 && value <= 255;
      default:
        return true;
    }
  }

  // The data of a tensor of `type`: a bare element for a scalar, else a flat list of exactly
  // num_elements elements. `at` is where errors about the count point. The elements are
  // counted before the tensor is allocated, so a huge type with a short list costs nothing.
  Tensor parse_tensor_data(const TensorType& type, const Token& at) {
    std::vector<Element> elements;
    const int64_t expected = type.num_elements();
    if (type.rank() == 0) {
      elements.push_back(parse_element(type.dtype));
    } else {
      expect(TokenKind::kLBracket, "to open the tensor data");
      parse_list_until(TokenKind::kRBracket, "to close the tensor data", [&] {
        if (static_cast<int64_t>(elements.size()) == expected) {
          lexer_.fail_at(at, "data has more than the " + std::to_string(expected) +
                                 " elements of " + type_to_string(type));
        }
        elements.push_back(parse_element(type.dtype));
      });
    }
    if (static_cast<int64_t>(elements.size()) != expected) {
      lexer_.fail_at(at, "data has " + std::to_string(elements.size()) + " elements but " +
                             type_to_string(type) + " has " + std::to_string(expected));
    }
    Tensor tensor(type);
    for (int64_t i = 0; i < expected; ++i) {
      if (is_float(type.dtype)) {
        tensor.set_double(i, elements[i].real);
      } else {
        tensor.set_int(i, elements[i].integer);
      }
    }
    return tensor;
  }

  bool starts_tensor_data() const {
    return is(TokenKind::kLBracket) || is(TokenKind::kNumber) || is(TokenKind::kMinus) ||
           is_ident("true") || is_ident("false") || is_ident("nan") || is_ident("inf");
  }

  // --- Graph structure -----------------------------------------------------------------------

  void parse_signature() {
    expect_keyword("graph", "at the start of the text");
    Token name = expect(TokenKind::kGraphName, "after 'graph'");
    graph_->set_name(name.text);
    expect(TokenKind::kLParen, "to open the graph inputs");
    parse_list_until(TokenKind::kRParen, "to close the graph inputs", [&] {
      ValueRef ref = expect_value_name("as a graph input");
      check_new(ref);
      expect(TokenKind::kColon, "after the input name");
      define(ref, graph_->add_input("", parse_type("as the input type")));
    });
    expect(TokenKind::kArrow, "after the graph inputs");
    expect(TokenKind::kLParen, "to open the graph result types");
    parse_list_until(TokenKind::kRParen, "to close the graph result types",
                     [&] { result_types_.push_back(parse_type("as a graph result type")); });
    expect(TokenKind::kLBrace, "to open the graph body");
  }

  void parse_statement() {
    std::vector<ValueRef> results;
    std::set<std::string> pending;
    do {
      ValueRef ref = expect_value_name("to start a statement (or 'return')");
      check_new(ref, pending);
      pending.insert(ref.key());
      results.push_back(std::move(ref));
    } while (accept(TokenKind::kComma));
    expect(TokenKind::kEquals, "after the defined names");
    if (is_ident("const")) {
      Token keyword = lexer_.take();
      if (results.size() != 1) lexer_.fail_at(keyword, "a constant defines exactly one value");
      parse_constant(results[0]);
    } else {
      parse_node(results);
    }
  }

  void parse_constant(const ValueRef& ref) {
    Token type_token = lexer_.peek();
    TensorType type = parse_type("after 'const'");
    if (starts_tensor_data()) {
      define(ref, graph_->add_constant("", parse_tensor_data(type, type_token)));
    } else {
      define(ref, graph_->add_elided_constant("", type));
    }
  }

  void parse_node(const std::vector<ValueRef>& results) {
    Token op_token = expect(TokenKind::kIdent, "as the op name");
    const OpInfo* info = OpRegistry::global().find(op_token.text);
    if (!info) lexer_.fail_at(op_token, "unknown op '" + op_token.text + "'");

    std::vector<Value*> operands;
    expect(TokenKind::kLParen, "to open the operands of " + op_token.text);
    parse_list_until(TokenKind::kRParen, "to close the operands of " + op_token.text,
                     [&] { operands.push_back(parse_operand("as an operand")); });

    AttributeMap attrs;
    std::unique_ptr<Graph> body;
    if (info->has_body) {
      body = parse_body(op_token.text);
    } else if (accept(TokenKind::kLBrace)) {
      parse_list_until(TokenKind::kRBrace, "to close the attributes",
                       [&] { parse_attribute(*info, attrs); });
    }

    expect(TokenKind::kColon, "before the result types of " + op_token.text);
    Token types_token = lexer_.peek();
    std::vector<TensorType> types;
    if (accept(TokenKind::kLParen)) {
      parse_list_until(TokenKind::kRParen, "to close the result types",
                       [&] { types.push_back(parse_type("as a result type")); });
    } else {
      types.push_back(parse_type("as the result type"));
    }
    if (types.size() != results.size()) {
      lexer_.fail_at(types_token, std::to_string(results.size()) + " names are defined but " +
                                      std::to_string(types.size()) + " result types are given");
    }
    if (info->num_results != OpInfo::kVariadic &&
        static_cast<int>(results.size()) != info->num_results) {
      lexer_.fail_at(results[0].token, op_token.text + " has " + std::to_string(info->num_results) +
                                           " results, not " + std::to_string(results.size()));
    }

    std::vector<std::string> provenance;
    if (is_ident("loc")) {
      lexer_.take();
      expect(TokenKind::kLParen, "after 'loc'");
      parse_list_until(TokenKind::kRParen, "to close loc(...)", [&] {
        provenance.push_back(expect(TokenKind::kString, "in loc(...)").text);
      });
    }

    try {
      Node* node = body ? graph_->add_fusion(op_token.text, std::move(operands), std::move(body),
                                             std::move(provenance))
                        : graph_->add_node_with_types(op_token.text, std::move(operands),
                                                      std::move(attrs), types,
                                                      std::move(provenance));
      if (node->results().size() != results.size()) {
        throw InputError(std::to_string(results.size()) + " names are defined but the body yields " +
                         std::to_string(node->results().size()) + " values");
      }
      for (size_t i = 0; i < results.size(); ++i) {
        if (node->result(i)->type() != types[i]) {
          throw InputError("result " + std::to_string(i) + " declared " +
                           type_to_string(types[i]) + " but the body yields " +
                           type_to_string(node->result(i)->type()));
        }
        define(results[i], node->result(i));
      }
      verify_node(*node);
    } catch (const InputError& error) {
      lexer_.fail_at(op_token, error.what());
    }
  }

  // A fusion body: '{' '^' '(' params ')' ':' {statement} 'yield' values '}'. The body is a
  // graph of its own: its names are separate from the enclosing graph's.
  std::unique_ptr<Graph> parse_body(const std::string& op) {
    expect(TokenKind::kLBrace, "to open the body of " + op);
    expect(TokenKind::kCaret, "to start the parameters of the body of " + op);
    auto body = std::make_unique<Graph>(op);
    std::swap(graph_, body);
    std::map<std::string, Value*> outer_values;
    std::swap(values_, outer_values);
    expect(TokenKind::kLParen, "to open the body parameters");
    parse_list_until(TokenKind::kRParen, "to close the body parameters", [&] {
      ValueRef ref = expect_value_name("as a body parameter");
      check_new(ref);
      expect(TokenKind::kColon, "after the parameter name");
      define(ref, graph_->add_input("", parse_type("as the parameter type")));
    });
    expect(TokenKind::kColon, "after the body parameters");
    while (!is_ident("yield")) {
      if (is(TokenKind::kEnd) || is(TokenKind::kRBrace) || is_ident("return")) {
        fail("expected 'yield' to end the body of " + op + ", found " +
             token_description(lexer_.peek()));
      }
      parse_statement();
    }
    lexer_.take();
    std::vector<Value*> outputs;
    do {
      outputs.push_back(parse_operand("as a yielded value"));
    } while (accept(TokenKind::kComma));
    graph_->set_outputs(std::move(outputs));
    expect(TokenKind::kRBrace, "to close the body of " + op);
    std::swap(values_, outer_values);
    std::swap(graph_, body);
    return body;
  }

  void parse_attribute(const OpInfo& info, AttributeMap& attrs) {
    Token name = expect(TokenKind::kIdent, "as an attribute name");
    const AttrSpec* spec = info.find_attr(name.text);
    if (!spec) {
      lexer_.fail_at(name, "unknown attribute '" + name.text + "' for op " + info.name);
    }
    if (attrs.count(name.text)) lexer_.fail_at(name, "duplicate attribute '" + name.text + "'");
    expect(TokenKind::kEquals, "after the attribute name");
    const std::string context =
        "for " + std::string(attr_kind_name(spec->kind)) + " attribute '" + name.text + "'";
    attrs[name.text] = parse_attribute_value(spec->kind, context);
  }

  Attribute parse_attribute_value(AttrKind kind, const std::string& context) {
    switch (kind) {
      case AttrKind::kInt:
        return parse_integer(context);
      case AttrKind::kFloat:
        return parse_real<double>(context, true);
      case AttrKind::kString:
        return expect(TokenKind::kString, context).text;
      case AttrKind::kInts: {
        std::vector<int64_t> values;
        expect(TokenKind::kLBracket, context);
        parse_list_until(TokenKind::kRBracket, "to close the list",
                         [&] { values.push_back(parse_integer(context)); });
        return values;
      }
      case AttrKind::kFloats: {
        std::vector<double> values;
        expect(TokenKind::kLBracket, context);
        parse_list_until(TokenKind::kRBracket, "to close the list",
                         [&] { values.push_back(parse_real<double>(context, true)); });
        return values;
      }
      case AttrKind::kDType: {
        Token token = expect(TokenKind::kIdent, context);
        std::optional<DType> dtype = parse_dtype(token.text);
        if (!dtype) lexer_.fail_at(token, "unknown dtype '" + token.text + "' " + context);
        return *dtype;
      }
      case AttrKind::kTensor: {
        expect_keyword("dense", context);
        expect(TokenKind::kLAngle, "after 'dense'");
        Token type_token = lexer_.peek();
        TensorType type = parse_type("in dense<...>");
        expect(TokenKind::kColon, "after the type in dense<...>");
        Tensor data = parse_tensor_data(type, type_token);
        expect(TokenKind::kRAngle, "to close dense<...>");
        return data;
      }
    }
    throw InternalError("unknown attribute kind");
  }

  void parse_return() {
    Token keyword = lexer_.take();
    std::vector<Value*> outputs;
    std::vector<Token> output_tokens;
    if (!is(TokenKind::kRBrace)) {
      do {
        output_tokens.push_back(lexer_.peek());
        outputs.push_back(parse_operand("as a returned value"));
      } while (accept(TokenKind::kComma));
    }
    if (outputs.size() != result_types_.size()) {
      lexer_.fail_at(keyword, "returns " + std::to_string(outputs.size()) +
                                  " values but the signature declares " +
                                  std::to_string(result_types_.size()));
    }
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (outputs[i]->type() != result_types_[i]) {
        lexer_.fail_at(output_tokens[i], "returned " + token_description(output_tokens[i]) +
                                             " has type " + type_to_string(outputs[i]->type()) +
                                             " but the signature declares " +
                                             type_to_string(result_types_[i]));
      }
    }
    graph_->set_outputs(std::move(outputs));
  }

  Lexer lexer_;
  std::unique_ptr<Graph> graph_;
  std::vector<TensorType> result_types_;
  std::map<std::string, Value*> values_;  // by ValueRef::key()
};

}  // namespace

std::unique_ptr<Graph> parse_graph(std::string_view text, const std::string& filename) {
  std::unique_ptr<Graph> graph = Parser(text, filename).parse();
  try {
    verify_graph(*graph);
  } catch (const InputError& error) {
    throw InputError(filename + ": " + error.what());
  }
  return graph;
}

}  // namespace kiln
