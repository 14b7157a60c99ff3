// ONNX RNN, GRU and LSTM (opsets 7, 14) -> kiln ops, unrolled over the sequence (its length is
// static): the input projection of every step at once (one matmul of [T·B, I] by Wᵀ, both
// biases added), then per step the recurrent matmul of the state by Rᵀ and the gates' activations,
// each direction on its own. The equations are ONNX's (gate orders: GRU z, r, h; LSTM i, o, f, c;
// peepholes i, o, f):
//
//   RNN   H' = f(Xt·Wᵀ + H·Rᵀ + Wb + Rb)
//   GRU   z = f(.. z ..), r = f(.. r ..); h̃ = g(Xt·Whᵀ + (r ⊙ H)·Rhᵀ + Rbh + Wbh), or with
//         linear_before_reset g(Xt·Whᵀ + r ⊙ (H·Rhᵀ + Rbh) + Wbh); H' = (1 − z) ⊙ h̃ + z ⊙ H
//   LSTM  i = f(.. i .. + Pi ⊙ C), f = f(.. f .. + Pf ⊙ C), c̃ = g(.. c ..), C' = f ⊙ C + i ⊙ c̃,
//         o = f(.. o .. + Po ⊙ C'), H' = o ⊙ h(C')
//
// `clip` bounds every activation's input. sequence_lens (a runtime input) masks the forward
// direction: a batch entry past its length keeps its state and outputs zeros, so Y_h and Y_c
// hold the state at its last step. A reverse direction takes sequence_lens only as a constant
// equal to the sequence length (each entry's reversal would start at its own end). layout 1
// reads X as [batch, sequence, input] and writes Y [batch, sequence, directions, hidden] and the
// states [batch, directions, hidden].
#include <functional>

#include "frontend/converters/layout_converters.h"
#include "frontend/converters/nn_converters.h"

namespace kiln::onnx_import {
namespace {

enum class Cell { kRnn, kGru, kLstm };

int gate_count(Cell cell) { return cell == Cell::kRnn ? 1 : cell == Cell::kGru ? 3 : 4; }

// The activation functions a direction applies: f (RNN); f, g (GRU); f, g, h (LSTM).
using Activation = std::function<Value*(Value*)>;

class Recurrent {
 public:
  Recurrent(NodeImporter& node, Cell cell) : node_(node), cell_(cell) {}

  std::vector<Value*> convert() {
    read_shapes();
    read_activations();
    std::vector<Value*> ys, hs, cs;
    for (int64_t d = 0; d < directions_; ++d) {
      const bool reverse = direction_ == "reverse" || (direction_ == "bidirectional" && d == 1);
      Direction result = run_direction(d, reverse);
      ys.push_back(result.y);
      hs.push_back(result.h);
      cs.push_back(result.c);
    }
    // Y [T, directions, B, H]; Y_h, Y_c [directions, B, H].
    Value* y = concat(ys, 1);
    Value* y_h = concat(hs, 0);
    Value* y_c = cell_ == Cell::kLstm ? concat(cs, 0) : nullptr;
    if (layout_ == 1) {
      y = transpose(y, {2, 0, 1, 3});
      y_h = transpose(y_h, {1, 0, 2});
      if (y_c) y_c = transpose(y_c, {1, 0, 2});
    }
    std::vector<Value*> outputs{y, y_h};
    if (cell_ == Cell::kLstm) outputs.push_back(y_c);
    return outputs;
  }

 private:
  struct Direction {
    Value* y = nullptr;  // [T, 1, B, H]
    Value* h = nullptr;  // [1, B, H]
    Value* c = nullptr;  // [1, B, H] (LSTM)
  };

  void read_shapes() {
    layout_ = node_.attr_int("layout", 0);
    if (layout_ != 0 && layout_ != 1) node_.fail("layout must be 0 or 1");
    x_ = node_.input(0);
    const Shape& x = x_->type().shape;
    if (x.size() != 3) node_.fail("X must be 3-D, not [" + shape_to_string(x) + "]");
    if (!is_float(x_->type().dtype)) node_.fail("X must hold floats");
    if (layout_ == 1) x_ = transpose(x_, {1, 0, 2});
    steps_ = x_->type().shape[0];
    batch_ = x_->type().shape[1];
    inputs_ = x_->type().shape[2];
    direction_ = node_.attr_string("direction", "forward");
    if (direction_ != "forward" && direction_ != "reverse" && direction_ != "bidirectional") {
      node_.fail("direction '" + direction_ + "' is not forward, reverse or bidirectional");
    }
    directions_ = direction_ == "bidirectional" ? 2 : 1;
    const Shape& r = node_.input(2)->type().shape;
    hidden_ =
        node_.has_attr("hidden_size") ? node_.attr_int("hidden_size") : (r.size() == 3 ? r[2] : 0);
    const int64_t rows = gate_count(cell_) * hidden_;
    if (hidden_ <= 0) node_.fail("hidden_size must be positive");
    expect_shape(1, "W", {directions_, rows, inputs_});
    expect_shape(2, "R", {directions_, rows, hidden_});
    if (node_.has_input(3)) expect_shape(3, "B", {directions_, 2 * rows});
    if (node_.has_input(5)) expect_state_shape(5, "initial_h");
    if (cell_ == Cell::kLstm) {
      if (node_.has_input(6)) expect_state_shape(6, "initial_c");
      if (node_.has_input(7)) expect_shape(7, "P", {directions_, 3 * hidden_});
      if (node_.attr_int("input_forget", 0) != 0) {
        node_.unsupported("input_forget=1 (coupled input and forget gates) is not supported");
      }
    }
    if (cell_ == Cell::kGru) linear_before_reset_ = node_.attr_int("linear_before_reset", 0) != 0;
    clip_ = node_.has_attr("clip") ? node_.attr_float("clip") : -1;
    if (node_.has_attr("clip") && !(clip_ > 0)) node_.fail("clip must be positive");
    if (node_.has_input(4)) read_sequence_lens();
  }

  void expect_shape(size_t input, const std::string& name, const Shape& shape) {
    if (node_.input(input)->type().shape != shape) {
      node_.fail(name + " must be [" + shape_to_string(shape) + "], not [" +
                 shape_to_string(node_.input(input)->type().shape) + "]");
    }
  }
  void expect_state_shape(size_t input, const std::string& name) {
    expect_shape(
        input, name,
        layout_ == 1 ? Shape{batch_, directions_, hidden_} : Shape{directions_, batch_, hidden_});
  }

  // A runtime sequence_lens masks the steps; a constant one equal to the sequence length for
  // every entry is no mask at all (and may then go with a reverse direction).
  void read_sequence_lens() {
    Value* lens = node_.input(4);
    if (lens->type().shape != Shape{batch_}) {
      node_.fail("sequence_lens must be [" + std::to_string(batch_) + "]");
    }
    if (lens->is_constant() && lens->has_data()) {
      bool whole = true;
      for (int64_t b = 0; b < batch_; ++b) whole = whole && lens->data().get_int(b) == steps_;
      if (whole) return;
    }
    if (direction_ != "forward") {
      node_.unsupported(
          "sequence_lens with a reverse direction is supported only as a constant equal to the "
          "sequence length");
    }
    lengths_ = lens->type().dtype == DType::kI64
                   ? lens
                   : node_.emit1("cast", {lens}, {{"to", Attribute(DType::kI64)}});
  }

  void read_activations() {
    const int per_direction = cell_ == Cell::kRnn ? 1 : cell_ == Cell::kGru ? 2 : 3;
    std::vector<std::string> names;
    if (node_.has_attr("activations")) {
      for (const std::string& name : node_.attr_strings("activations")) names.push_back(name);
      if (static_cast<int64_t>(names.size()) != per_direction * directions_) {
        node_.fail("activations names " + std::to_string(names.size()) + " functions, not " +
                   std::to_string(per_direction * directions_));
      }
    } else {
      const std::vector<std::string> defaults =
          cell_ == Cell::kRnn   ? std::vector<std::string>{"Tanh"}
          : cell_ == Cell::kGru ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                : std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"};
      for (int64_t d = 0; d < directions_; ++d)
        names.insert(names.end(), defaults.begin(), defaults.end());
    }
    alphas_ = node_.attr_floats("activation_alpha", std::vector<double>{});
    betas_ = node_.attr_floats("activation_beta", std::vector<double>{});
    for (const std::string& name : names) activations_.push_back(activation(name));
  }

  // The activation `name` (ONNX's names); those taking alpha or beta consume the next of
  // activation_alpha / activation_beta, or take the ONNX op's default.
  Activation activation(const std::string& name) {
    const auto next = [](std::vector<double>& values, size_t& used, double fallback) {
      return used < values.size() ? values[used++] : fallback;
    };
    const auto unary = [this](const char* op, AttributeMap attrs = {}) -> Activation {
      return [this, op, attrs](Value* v) { return node_.emit1(op, {v}, attrs); };
    };
    if (name == "Sigmoid") return unary("sigmoid");
    if (name == "Tanh") return unary("tanh");
    if (name == "Relu") return unary("relu");
    if (name == "Softsign") return unary("softsign");
    if (name == "Softplus") return unary("softplus");
    if (name == "LeakyRelu")
      return unary("leaky_relu", {{"alpha", next(alphas_, alpha_used_, 0.01)}});
    if (name == "ThresholdedRelu") {
      return unary("thresholded_relu", {{"alpha", next(alphas_, alpha_used_, 1.0)}});
    }
    if (name == "Elu") return unary("elu", {{"alpha", next(alphas_, alpha_used_, 1.0)}});
    if (name == "HardSigmoid") {
      const double alpha = next(alphas_, alpha_used_, 0.2);
      return unary("hard_sigmoid", {{"alpha", alpha}, {"beta", next(betas_, beta_used_, 0.5)}});
    }
    if (name == "Affine" || name == "ScaledTanh") {
      const double alpha = next(alphas_, alpha_used_, 1.0);
      const double beta = next(betas_, beta_used_, name == "Affine" ? 0.0 : 1.0);
      if (name == "Affine") {
        return [this, alpha, beta](Value* v) { return add(mul(v, scalar(alpha)), scalar(beta)); };
      }
      return [this, alpha, beta](Value* v) {
        return mul(node_.emit1("tanh", {mul(v, scalar(beta))}), scalar(alpha));
      };
    }
    node_.unsupported("activation '" + name + "' is not supported");
  }

  Direction run_direction(int64_t d, bool reverse) {
    const int64_t gates = gate_count(cell_);
    const int64_t rows = gates * hidden_;
    // W[d]ᵀ [I, G·H], R[d]ᵀ [H, G·H]; the biases [G·H] each (zero when B is absent).
    Value* w_t = transpose(reshape(slice(node_.input(1), 0, d, d + 1), {rows, inputs_}), {1, 0});
    Value* r_t = transpose(reshape(slice(node_.input(2), 0, d, d + 1), {rows, hidden_}), {1, 0});
    Value* w_bias = nullptr;
    Value* r_bias = nullptr;
    if (node_.has_input(3)) {
      Value* b = reshape(slice(node_.input(3), 0, d, d + 1), {2 * rows});
      w_bias = slice(b, 0, 0, rows);
      r_bias = slice(b, 0, rows, 2 * rows);
    }
    // Every step's input projection at once: [T, B, G·H], W's bias in, and R's but for GRU's h
    // gate (which R multiplies after the reset).
    Value* xw = node_.emit1("matmul", {reshape(x_, {steps_ * batch_, inputs_}), w_t});
    if (w_bias) xw = add(xw, w_bias);
    if (r_bias && cell_ != Cell::kGru) xw = add(xw, r_bias);
    if (r_bias && cell_ == Cell::kGru) {
      xw = add(xw, concat({slice(r_bias, 0, 0, 2 * hidden_), zeros({hidden_})}, 0));
    }
    xw = reshape(xw, {steps_, batch_, rows});

    Value* h = initial_state(5, d);
    Value* c = cell_ == Cell::kLstm ? initial_state(6, d) : nullptr;
    Value* peephole = cell_ == Cell::kLstm && node_.has_input(7)
                          ? reshape(slice(node_.input(7), 0, d, d + 1), {3 * hidden_})
                          : nullptr;
    const size_t first = static_cast<size_t>(d) * (cell_ == Cell::kRnn   ? 1
                                                   : cell_ == Cell::kGru ? 2
                                                                         : 3);
    const Activation& f = activations_[first];
    std::vector<Value*> ys(static_cast<size_t>(steps_));
    for (int64_t i = 0; i < steps_; ++i) {
      const int64_t t = reverse ? steps_ - 1 - i : i;
      Value* x_t = reshape(slice(xw, 0, t, t + 1), {batch_, rows});
      Value* h_next = nullptr;
      Value* c_next = nullptr;
      if (cell_ == Cell::kRnn) {
        h_next = f(clipped(add(x_t, matmul(h, r_t))));
      } else if (cell_ == Cell::kGru) {
        const Activation& g = activations_[first + 1];
        Value* zr = add(slice(x_t, 1, 0, 2 * hidden_), matmul(h, slice(r_t, 1, 0, 2 * hidden_)));
        Value* z = f(clipped(slice(zr, 1, 0, hidden_)));
        Value* r = f(clipped(slice(zr, 1, hidden_, 2 * hidden_)));
        Value* r_h = slice(r_t, 1, 2 * hidden_, 3 * hidden_);
        Value* rh_bias = r_bias ? slice(r_bias, 0, 2 * hidden_, 3 * hidden_) : nullptr;
        Value* recurrent = nullptr;
        if (linear_before_reset_) {
          recurrent = matmul(h, r_h);
          if (rh_bias) recurrent = add(recurrent, rh_bias);
          recurrent = mul(r, recurrent);
        } else {
          recurrent = matmul(mul(r, h), r_h);
          if (rh_bias) recurrent = add(recurrent, rh_bias);
        }
        Value* candidate = g(clipped(add(slice(x_t, 1, 2 * hidden_, 3 * hidden_), recurrent)));
        // (1 − z) ⊙ h̃ + z ⊙ H = h̃ + z ⊙ (H − h̃)
        h_next = add(candidate, mul(z, node_.emit1("sub", {h, candidate})));
      } else {
        const Activation& g = activations_[first + 1];
        const Activation& out = activations_[first + 2];
        Value* all = add(x_t, matmul(h, r_t));
        const auto gate = [&](int64_t k) { return slice(all, 1, k * hidden_, (k + 1) * hidden_); };
        const auto peep = [&](int64_t k, Value* state) {
          return peephole ? mul(slice(peephole, 0, k * hidden_, (k + 1) * hidden_), state)
                          : nullptr;
        };
        const auto plus = [&](Value* a, Value* b) { return b ? add(a, b) : a; };
        Value* input_gate = f(clipped(plus(gate(0), peep(0, c))));
        Value* forget_gate = f(clipped(plus(gate(2), peep(2, c))));
        Value* cell_input = g(clipped(gate(3)));
        c_next = add(mul(forget_gate, c), mul(input_gate, cell_input));
        Value* output_gate = f(clipped(plus(gate(1), peep(1, c_next))));
        h_next = mul(output_gate, out(c_next));
      }
      Value* y_t = h_next;
      if (lengths_) {
        // [B, 1]: whether step t lies within the entry's length.
        Value* live = reshape(
            node_.emit1("less", {node_.constant(Tensor::scalar_i64(t)), lengths_}), {batch_, 1});
        h_next = node_.emit1("where", {live, h_next, h});
        if (c_next) c_next = node_.emit1("where", {live, c_next, c});
        y_t = node_.emit1("where", {live, y_t, zeros({1})});
      }
      h = h_next;
      c = c_next;
      ys[static_cast<size_t>(t)] = reshape(y_t, {1, 1, batch_, hidden_});
    }
    return {.y = concat(ys, 0),
            .h = reshape(h, {1, batch_, hidden_}),
            .c = c ? reshape(c, {1, batch_, hidden_}) : nullptr};
  }

  // initial_h or initial_c of direction d as [B, H], or zeros.
  Value* initial_state(size_t input, int64_t d) {
    if (!node_.has_input(input)) return zeros({batch_, hidden_});
    Value* state = node_.input(input);
    if (layout_ == 1) state = transpose(state, {1, 0, 2});
    return reshape(slice(state, 0, d, d + 1), {batch_, hidden_});
  }

  Value* clipped(Value* v) {
    if (clip_ < 0) return v;
    return node_.emit1("clip", {v}, {{"min", -clip_}, {"max", clip_}});
  }

  Value* scalar(double value) { return node_.scalar_constant(x_->type().dtype, value); }
  Value* zeros(const Shape& shape) { return node_.constant(Tensor(x_->type().dtype, shape)); }
  Value* add(Value* a, Value* b) { return node_.emit1("add", {a, b}); }
  Value* mul(Value* a, Value* b) { return node_.emit1("mul", {a, b}); }
  Value* matmul(Value* a, Value* b) { return node_.emit1("matmul", {a, b}); }
  Value* reshape(Value* v, const Shape& shape) { return node_.emit_reshape(v, shape); }
  Value* transpose(Value* v, const std::vector<int64_t>& perm) {
    return node_.emit1("transpose", {v}, {{"perm", perm}});
  }
  Value* slice(Value* v, int64_t axis, int64_t begin, int64_t end) {
    return node_.emit_slice(v, axis, begin, end);
  }
  Value* concat(const std::vector<Value*>& parts, int64_t axis) {
    return parts.size() == 1 ? parts[0] : node_.emit1("concat", parts, {{"axis", axis}});
  }

  NodeImporter& node_;
  const Cell cell_;
  Value* x_ = nullptr;        // [T, B, I]
  Value* lengths_ = nullptr;  // int64 [B] where steps are masked
  int64_t layout_ = 0, steps_ = 0, batch_ = 0, inputs_ = 0, hidden_ = 0, directions_ = 1;
  std::string direction_;
  bool linear_before_reset_ = false;
  double clip_ = -1;
  std::vector<Activation> activations_;
  std::vector<double> alphas_, betas_;
  size_t alpha_used_ = 0, beta_used_ = 0;
};

// Y, Y_h (and Y_c); the importer drops those the node does not name, and dead-code elimination
// what only they used.
std::vector<Value*> convert_rnn(NodeImporter& node) {
  return Recurrent(node, Cell::kRnn).convert();
}
std::vector<Value*> convert_gru(NodeImporter& node) {
  return Recurrent(node, Cell::kGru).convert();
}
std::vector<Value*> convert_lstm(NodeImporter& node) {
  return Recurrent(node, Cell::kLstm).convert();
}

}  // namespace

void register_recurrent_converters(ConverterTable& table) {
  for (int since : {7, 14}) {  // 14 added layout
    table.add("RNN", since, convert_rnn);
    table.add("GRU", since, convert_gru);
    table.add("LSTM", since, convert_lstm);
  }
}

}  // namespace kiln::onnx_import
