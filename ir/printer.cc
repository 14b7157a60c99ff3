// IR text printer (the format is described in docs/IR.md).
//
// Values print by name: %name when the name is an identifier, %"quoted" otherwise, and
// unnamed values get %0, %1, ... in order of definition. Names that two values share get a
// ".1", ".2", ... suffix on the later one, so the text always parses back.
#include "ir/printer.h"

#include <charconv>
#include <cmath>
#include <set>
#include <unordered_map>

#include "ir/lexer.h"
#include "ir/op_registry.h"

namespace kiln {
namespace {

bool is_all_digits(const std::string& text) {
  return !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
}

bool is_bare_name(const std::string& name) {
  if (name.empty() || !is_ident_start(name[0])) return false;
  for (char c : name) {
    if (!is_ident_char(c)) return false;
  }
  return true;
}

std::string quote(const std::string& text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string quoted = "\"";
  for (char c : text) {
    const unsigned char byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      quoted += '\\';
      quoted += c;
    } else if (c == '\n') {
      quoted += "\\n";
    } else if (c == '\t') {
      quoted += "\\t";
    } else if (c == '\r') {
      quoted += "\\r";
    } else if (byte < 0x20 || byte == 0x7f) {
      quoted += "\\x";
      quoted += kHex[byte >> 4];
      quoted += kHex[byte & 15];
    } else {
      quoted += c;
    }
  }
  return quoted + "\"";
}

std::string name_or_quoted(const std::string& name) {
  return is_bare_name(name) ? name : quote(name);
}

// Shortest text that parses back to the same value, always with a '.' or exponent so a float
// never reads as an integer; nan, inf and -inf are spelled out.
template <class Real>
std::string format_real(Real value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value < 0 ? "-inf" : "inf";
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  std::string text(buffer, result.ptr);
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return text;
}

std::string format_element(const Tensor& tensor, int64_t index) {
  switch (tensor.dtype()) {
    case DType::kF64:
      return format_real(tensor.get_double(index));
    case DType::kF32:
    case DType::kF16:
    case DType::kBF16:
      return format_real(tensor.get_float(index));
    case DType::kBool:
      return tensor.get_int(index) ? "true" : "false";
    default:
      return std::to_string(tensor.get_int(index));
  }
}

// A scalar's single element, else the flat row-major list of elements.
std::string format_tensor_data(const Tensor& tensor) {
  if (tensor.rank() == 0) return format_element(tensor, 0);
  std::string text = "[";
  for (int64_t i = 0; i < tensor.num_elements(); ++i) {
    if (i) text += ", ";
    text += format_element(tensor, i);
  }
  return text + "]";
}

template <class T, class Format>
std::string format_list(const std::vector<T>& items, Format format) {
  std::string text = "[";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) text += ", ";
    text += format(items[i]);
  }
  return text + "]";
}

std::string format_attribute(const Attribute& attr) {
  switch (attr.kind()) {
    case AttrKind::kInt:
      return std::to_string(attr.as_int());
    case AttrKind::kFloat:
      return format_real(attr.as_float());
    case AttrKind::kString:
      return quote(attr.as_string());
    case AttrKind::kInts:
      return format_list(attr.as_ints(), [](int64_t v) { return std::to_string(v); });
    case AttrKind::kFloats:
      return format_list(attr.as_floats(), [](double v) { return format_real(v); });
    case AttrKind::kDType:
      return std::string(dtype_name(attr.as_dtype()));
    case AttrKind::kTensor:
      return "dense<" + type_to_string(attr.as_tensor().type()) + ": " +
             format_tensor_data(attr.as_tensor()) + ">";
  }
  return "?";
}

class Printer {
 public:
  // `indent` prefixes every statement: two spaces in a graph, two more per fusion body.
  Printer(const Graph& graph, const PrintOptions& options, std::string indent = "  ")
      : graph_(graph), options_(options), indent_(std::move(indent)) {}

  std::string print() {
    name_values();
    print_signature();
    print_statements();
    print_terminator("return");
    out_ += "}\n";
    return std::move(out_);
  }

  // A fusion body: "^(params):", its statements and "yield"; its names are its own.
  std::string print_body() {
    name_values();
    out_ += indent_ + "^(";
    print_typed_inputs();
    out_ += "):\n";
    print_statements();
    print_terminator("yield");
    return std::move(out_);
  }

 private:
  void name_values() {
    for (const Value* input : graph_.inputs()) assign_name(input);
    for (const Value* constant : graph_.constants()) assign_name(constant);
    for (const Node* node : graph_.nodes()) {
      for (const Value* result : node->results()) assign_name(result);
    }
  }

  // Gives `value` its printed name ("%x", "%\"a/b\"", "%3"), unless it already has one.
  const std::string& assign_name(const Value* value) {
    auto found = printed_names_.find(value);
    if (found != printed_names_.end()) return found->second;
    std::string printed;
    if (value->name().empty()) {
      printed = "%" + std::to_string(next_number_++);
    } else {
      std::string name = value->name();
      for (int suffix = 1; taken_names_.count(name); ++suffix) {
        name = value->name() + "." + std::to_string(suffix);
      }
      taken_names_.insert(name);
      printed = "%" + (is_all_digits(name) ? quote(name) : name_or_quoted(name));
    }
    return printed_names_.emplace(value, std::move(printed)).first->second;
  }

  // A value defined outside the graph (a broken graph) still prints, with a fresh name.
  std::string value_ref(const Value* value) {
    return value ? assign_name(value) : std::string("%<null>");
  }

  void print_typed_inputs() {
    const auto& inputs = graph_.inputs();
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (i) out_ += ", ";
      out_ += value_ref(inputs[i]) + ": " + type_to_string(inputs[i]->type());
    }
  }

  void print_signature() {
    const std::string& name = graph_.name();
    out_ += "graph @" + (is_all_digits(name) ? quote(name) : name_or_quoted(name)) + "(";
    print_typed_inputs();
    out_ += ") -> (";
    const auto& outputs = graph_.outputs();
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (i) out_ += ", ";
      out_ += outputs[i] ? type_to_string(outputs[i]->type()) : "?";
    }
    out_ += ") {\n";
  }

  void print_statements() {
    for (const Value* constant : graph_.constants()) print_constant(*constant);
    for (const Node* node : graph_.nodes()) print_node(*node);
  }

  void print_constant(const Value& constant) {
    out_ += indent_ + value_ref(&constant) + " = const " + type_to_string(constant.type());
    if (constant.has_data() && constant.type().num_elements() <= options_.max_inline_elements) {
      out_ += " " + format_tensor_data(constant.data());
    }
    out_ += "\n";
  }

  void print_node(const Node& node) {
    out_ += indent_;
    for (size_t i = 0; i < node.results().size(); ++i) {
      if (i) out_ += ", ";
      out_ += value_ref(node.result(i));
    }
    out_ += " = " + node.op() + "(";
    for (size_t i = 0; i < node.operands().size(); ++i) {
      if (i) out_ += ", ";
      out_ += value_ref(node.operand(i));
    }
    out_ += ")";
    print_attributes(node.attrs());
    if (const Graph* body = node.body()) {
      out_ += " {\n" + Printer(*body, options_, indent_ + "  ").print_body() + indent_ + "}";
    }
    out_ += " : ";
    print_result_types(node);
    print_provenance(node.provenance());
    out_ += "\n";
  }

  void print_attributes(const AttributeMap& attrs) {
    if (attrs.empty()) return;
    out_ += " {";
    bool first = true;
    for (const auto& [name, value] : attrs) {
      if (!first) out_ += ", ";
      first = false;
      out_ += name + "=" + format_attribute(value);
    }
    out_ += "}";
  }

  void print_result_types(const Node& node) {
    const auto& results = node.results();
    if (results.size() == 1) {
      out_ += type_to_string(results[0]->type());
      return;
    }
    out_ += "(";
    for (size_t i = 0; i < results.size(); ++i) {
      if (i) out_ += ", ";
      out_ += type_to_string(results[i]->type());
    }
    out_ += ")";
  }

  void print_provenance(const std::vector<std::string>& provenance) {
    if (provenance.empty()) return;
    out_ += " loc(";
    for (size_t i = 0; i < provenance.size(); ++i) {
      if (i) out_ += ", ";
      out_ += quote(provenance[i]);
    }
    out_ += ")";
  }

  // "return %a, %b" or, in a body, "yield %a, %b".
  void print_terminator(const char* keyword) {
    out_ += indent_ + keyword;
    const auto& outputs = graph_.outputs();
    for (size_t i = 0; i < outputs.size(); ++i) {
      out_ += i ? ", " : " ";
      out_ += value_ref(outputs[i]);
    }
    out_ += "\n";
  }

  const Graph& graph_;
  const PrintOptions& options_;
  const std::string indent_;
  std::unordered_map<const Value*, std::string> printed_names_;
  std::set<std::string> taken_names_;
  int next_number_ = 0;
  std::string out_;
};

}  // namespace

std::string print_graph(const Graph& graph, const PrintOptions& options) {
  return Printer(graph, options).print();
}

}  // namespace kiln
