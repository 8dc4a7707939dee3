// See parser.h. Module structure: header, computations, instructions, name resolution.
#include "compiler/ir/parser.h"

#include <algorithm>
#include <map>
#include <set>

#include "compiler/ir/parser_internal.h"
#include "compiler/ir/printer.h"

namespace detrain::ir {
namespace {

using namespace parser_internal;

struct OperandRef {
  std::string name;
  SourceLoc loc;
};

struct PendingComputation {
  Computation* computation;
  std::map<std::string, Instruction*> by_name;
  std::vector<std::pair<Instruction*, std::vector<OperandRef>>> operands;
};

struct ComputationRef {
  Instruction* instr;
  Attr attr;
  std::string name;
  SourceLoc loc;
};

class Parser {
 public:
  // A copy, bitcast or is-finite, or a gather or scatter with batching dimensions: rewritten
  // once its operands are known (ResolveLayoutOps).
  struct LayoutOp {
    Instruction* instr;
    std::string name;
    SourceLoc loc;
    Computation* computation = nullptr;
  };

  explicit Parser(std::string_view text) : cur_(text) {}

  Result<std::unique_ptr<Module>> Parse() {
    auto module = ParseBody();
    DETRAIN_RETURN_IF_ERROR(cur_.CheckInput());  // an unterminated comment explains any error
    return module;
  }

 private:
  Result<std::unique_ptr<Module>> ParseBody() {
    DETRAIN_RETURN_IF_ERROR(cur_.Expect("HloModule", "at the start of the module"));
    std::string name = cur_.ReadName();
    if (name.empty())
      return cur_.Error("expected a module name after 'HloModule', found " + cur_.Found());
    cur_.SkipLine();  // XLA's header attributes (entry_computation_layout=...) carry no meaning
                      // here
    module_ = std::make_unique<Module>(name);
    DETRAIN_RETURN_IF_ERROR(ParseDebugTables(cur_, module_->debug_tables()));
    while (!cur_.AtEnd()) DETRAIN_RETURN_IF_ERROR(ParseComputation());
    if (module_->entry() == nullptr) return cur_.Error("the module has no ENTRY computation");
    std::set<const Computation*> accumulators;  // reduce's, scatter's, all-reduce's to_apply
    for (const ComputationRef& ref : comp_refs_) {
      auto it = computations_.find(ref.name);
      if (it == computations_.end()) {
        return Cursor::ErrorAt(ref.loc, "unknown computation " + Quoted(ref.name));
      }
      ref.instr->attrs[ref.attr].computation = it->second;
      const Opcode op = ref.instr->opcode;
      if (ref.attr == Attr::kToApply && op != Opcode::kCall) accumulators.insert(it->second);
    }
    DETRAIN_RETURN_IF_ERROR(WidenHalfTypes(*module_, half_, accumulators));
    return std::move(module_);
  }

  Status ParseComputation() {
    bool is_entry = cur_.TryConsumeKeyword("ENTRY");
    SourceLoc loc = (cur_.SkipSpace(), cur_.Loc());
    std::string name = cur_.ReadName();
    if (name.empty()) return cur_.Error("expected a computation name, found " + cur_.Found());
    if (computations_.count(name))
      return Cursor::ErrorAt(loc, "duplicate computation name " + Quoted(name));
    if (cur_.Peek() == '(') {  // XLA signature "(a: f32[], b: f32[]) -> f32[]": implied by the body
      int depth = 0;
      do {
        char c = cur_.Next();
        if (c == '\0') return cur_.Error("unterminated computation signature");
        depth += c == '(' ? 1 : c == ')' ? -1 : 0;
      } while (depth > 0);
      DETRAIN_RETURN_IF_ERROR(cur_.Expect("->", "after a computation signature"));
      DETRAIN_RETURN_IF_ERROR(ParseShape(cur_).status());
    }
    DETRAIN_RETURN_IF_ERROR(cur_.Expect("{", "to open computation " + Quoted(name)));
    PendingComputation pending{
        module_->AddComputation(std::make_unique<Computation>(name)), {}, {}};
    computations_[name] = pending.computation;
    if (is_entry) {
      if (module_->entry())
        return Cursor::ErrorAt(loc, "a second ENTRY computation " + Quoted(name));
      module_->set_entry(pending.computation);
    }
    Instruction* last = nullptr;
    while (!cur_.TryConsume("}")) {
      if (cur_.AtEnd()) return cur_.Error("expected '}' to close computation " + Quoted(name));
      DETRAIN_ASSIGN_OR_RETURN(last, ParseInstruction(pending));
    }
    if (last == nullptr)
      return Cursor::ErrorAt(loc, "computation " + Quoted(name) + " has no instructions");
    if (pending.computation->root() == nullptr) pending.computation->set_root(last);
    DETRAIN_RETURN_IF_ERROR(ResolveOperands(pending));
    DETRAIN_RETURN_IF_ERROR(ResolveLayoutOps());
    return NameParameters(*pending.computation);
  }

  Result<Instruction*> ParseInstruction(PendingComputation& pending) {
    bool is_root = cur_.TryConsumeKeyword("ROOT");
    SourceLoc loc = (cur_.SkipSpace(), cur_.Loc());
    auto instr = std::make_unique<Instruction>();
    instr->loc = loc;
    instr->name = cur_.ReadName();
    if (instr->name.empty())
      return cur_.Error("expected an instruction name, found " + cur_.Found());
    if (pending.by_name.count(instr->name)) {
      return Cursor::ErrorAt(loc, "duplicate instruction name " + Quoted(instr->name));
    }
    DETRAIN_RETURN_IF_ERROR(cur_.Expect("=", "after instruction name " + Quoted(instr->name)));
    bool other_layout = false;
    std::vector<int64_t> minor_to_major;
    HalfFormat half = HalfFormat::kNone;
    DETRAIN_ASSIGN_OR_RETURN(instr->shape, ParseShape(cur_, &other_layout, &minor_to_major, &half));
    if (half != HalfFormat::kNone) half_[instr.get()] = half;
    SourceLoc op_loc = (cur_.SkipSpace(), cur_.Loc());
    std::string op_name = cur_.ReadWord();
    auto opcode = OpcodeFromName(op_name);
    // XLA's layout ops, which optimized modules hold: between row-major layouts a copy is the
    // identity and a bitcast a reshape (or, same dimensions, a bitcast-convert); they become
    // those ops once the operand is known (ResolveLayoutOps).
    const bool layout_op = op_name == "copy" || op_name == "bitcast";
    if (layout_op) opcode = Opcode::kReshape;
    // is-finite(x), a pred per element: x - x == 0 exactly when x is finite (an infinity or a
    // NaN gives NaN, and NaN == 0 is false), so it becomes that compare (ExpandIsFinite).
    const bool is_finite = op_name == "is-finite";
    if (is_finite) opcode = Opcode::kCompare;
    // select-and-scatter (max-pooling's gradient) is parsed as a reduce-window, whose window
    // attribute it has, and expanded once its operands are known (ExpandSelectScatter).
    const bool select_scatter = op_name == "select-and-scatter";
    if (select_scatter) opcode = Opcode::kReduceWindow;
    // sort (parsed as a reduce: dimensions and to_apply) and topk (k, largest) become a stable
    // sorting network of exact ops (sort.cc).
    const bool sort = op_name == "sort", topk = op_name == "topk";
    if (sort) opcode = Opcode::kReduce;
    if (topk) opcode = Opcode::kTuple;
    if (!opcode) {
      return Cursor::ErrorAt(op_loc, op_name.empty()
                                         ? "expected an op name, found " + cur_.Found()
                                         : "unknown or unsupported op " + Quoted(op_name));
    }
    instr->opcode = *opcode;
    std::vector<OperandRef> operands;
    DETRAIN_RETURN_IF_ERROR(ParseOperands(*instr, &operands));
    while (cur_.TryConsume(",")) DETRAIN_RETURN_IF_ERROR(ParseAttribute(*instr));
    if (!topk && topk_args_.count(instr.get())) {
      return Cursor::ErrorAt(op_loc, "attributes k and largest are only for topk");
    }
    const bool total_order = total_order_.count(instr.get()) != 0;
    // XLA's TopK custom call (optimized modules): a topk with its own comparator.
    const bool topk_call = instr->opcode == Opcode::kCustomCall &&
                           instr->attrs.count(Attr::kCustomCallTarget) &&
                           instr->attrs.at(Attr::kCustomCallTarget).s == "TopK";
    if (called_.count(instr.get()) && !topk_call) {
      return Cursor::ErrorAt(op_loc,
                             "called_computations is only supported on the TopK "
                             "custom call");
    }
    if (topk_call) op_name = "topk";
    // A gather or scatter with batching dimensions becomes an unbatched one (UnbatchIndexing).
    // A reduce of several inputs (argmax) becomes elementwise ops in reduce's order
    // (ExpandReduceOfMany).
    const bool many =
        (instr->opcode == Opcode::kReduce || instr->opcode == Opcode::kReduceWindow) &&
        operands.size() > 2 && !select_scatter && !sort;
    const bool batched = instr->attrs.count(Attr::kOperandBatchingDims) ||
                         instr->attrs.count(Attr::kStartIndicesBatchingDims) ||
                         instr->attrs.count(Attr::kInputBatchingDims) ||
                         instr->attrs.count(Attr::kScatterIndicesBatchingDims);
    Instruction* raw = pending.computation->AddInstruction(std::move(instr));
    if (other_layout) other_layout_[raw] = std::move(minor_to_major);
    if (layout_op || is_finite || batched || select_scatter || many || sort || topk ||
        total_order || topk_call) {
      layout_ops_.push_back({raw, op_name, op_loc, pending.computation});
    }
    pending.by_name[raw->name] = raw;
    pending.operands.push_back({raw, std::move(operands)});
    if (is_root) {
      if (pending.computation->root()) return Cursor::ErrorAt(loc, "a second ROOT instruction");
      pending.computation->set_root(raw);
    }
    return raw;
  }

  Status ParseOperands(Instruction& instr, std::vector<OperandRef>* operands) {
    DETRAIN_RETURN_IF_ERROR(
        cur_.Expect("(", "after op name '" + std::string(OpcodeName(instr.opcode)) + "'"));
    if (instr.opcode == Opcode::kParameter) {
      DETRAIN_ASSIGN_OR_RETURN(instr.parameter_number, cur_.ReadInt("parameter number"));
      if (instr.parameter_number < 0) return cur_.Error("parameter numbers must be non-negative");
    } else if (instr.opcode == Opcode::kConstant) {
      DETRAIN_ASSIGN_OR_RETURN(instr.literal, ParseLiteral(cur_, instr.shape));
    } else if (cur_.Peek() != ')') {
      do {
        if (LookingAtShape(cur_)) DETRAIN_RETURN_IF_ERROR(ParseShape(cur_).status());  // XLA style
        SourceLoc loc = (cur_.SkipSpace(), cur_.Loc());
        std::string name = cur_.ReadName();
        if (name.empty()) return cur_.Error("expected an operand name, found " + cur_.Found());
        operands->push_back({name, loc});
      } while (cur_.TryConsume(","));
    }
    return cur_.Expect(")", "to close the operand list");
  }

  Status ParseAttribute(Instruction& instr) {
    SourceLoc loc = (cur_.SkipSpace(), cur_.Loc());
    std::string name = cur_.ReadWord();
    if (name.empty()) return cur_.Error("expected an attribute name, found " + cur_.Found());
    DETRAIN_RETURN_IF_ERROR(cur_.Expect("=", "after attribute name " + Quoted(name)));
    auto attr = AttrFromName(name);
    if (!attr) return ParseForeignAttribute(instr, name, loc);
    if (instr.attrs.count(*attr))
      return Cursor::ErrorAt(loc, "duplicate attribute " + Quoted(name));
    std::string comp_name;
    DETRAIN_RETURN_IF_ERROR(ParseAttrValue(cur_, *attr, &instr.attrs[*attr], &comp_name));
    if (AttrKindOf(*attr) == AttrKind::kComputation)
      comp_refs_.push_back({&instr, *attr, comp_name, loc});
    return Status::Ok();
  }

  Status ParseForeignAttribute(Instruction& instr, const std::string& name, SourceLoc loc) {
    if (name == "called_computations") {
      // {%name}: one computation (the TopK custom call's comparator).
      DETRAIN_RETURN_IF_ERROR(cur_.Expect("{", "to open called_computations"));
      SourceLoc nloc = (cur_.SkipSpace(), cur_.Loc());
      std::string comp = cur_.ReadName();
      if (comp.empty()) return cur_.Error("expected a computation name, found " + cur_.Found());
      DETRAIN_RETURN_IF_ERROR(cur_.Expect("}", "after the one computation of called_computations"));
      called_[&instr] = {comp, nloc};
      return Status::Ok();
    }
    if (name == "k" || name == "largest" || name == "is_stable") {
      SourceLoc vloc = (cur_.SkipSpace(), cur_.Loc());
      if (name == "k") {
        DETRAIN_ASSIGN_OR_RETURN(int64_t k, cur_.ReadInt("k"));
        if (k < 0) return Cursor::ErrorAt(vloc, "k must not be negative");
        topk_args_[&instr].k = k;
        return Status::Ok();
      }
      std::string v = cur_.ReadWord();
      if (v != "true" && v != "false") {
        return Cursor::ErrorAt(vloc, name + " must be true or false, found " + Quoted(v));
      }
      // is_stable: detrain's sort is always stable, which an unstable sort may be.
      if (name == "largest") topk_args_[&instr].largest = v == "true";
      return Status::Ok();
    }
    switch (ClassifyForeignAttr(name)) {
      case ForeignAttr::kIgnore:
        return cur_.SkipValue();
      case ForeignAttr::kDefaultOnly: {
        SourceLoc vloc = (cur_.SkipSpace(), cur_.Loc());
        std::string v = cur_.ReadWord();
        if (name == "type" && v == "TOTALORDER") {
          total_order_.insert(&instr);  // ExpandTotalOrderCompare
          return Status::Ok();
        }
        bool ok = name == "type" ? (v == "FLOAT" || v == "SIGNED" || v == "UNSIGNED") : v == "1";
        if (!ok) {
          return Cursor::ErrorAt(
              vloc, "unsupported " + name + "=" + v + " (only " +
                        (name == "type" ? "FLOAT, SIGNED, UNSIGNED or TOTALORDER" : "1") +
                        " is supported)");
        }
        return Status::Ok();
      }
      case ForeignAttr::kUnknown:
        break;
    }
    return Cursor::ErrorAt(loc, "unknown or unsupported attribute " + Quoted(name));
  }

  Status ResolveOperands(PendingComputation& pending) {
    for (auto& [instr, refs] : pending.operands) {
      for (const OperandRef& ref : refs) {
        auto it = pending.by_name.find(ref.name);
        if (it == pending.by_name.end()) {
          return Cursor::ErrorAt(ref.loc, "unknown operand " + Quoted(ref.name) +
                                              " in computation '" + pending.computation->name() +
                                              "'");
        }
        instr->operands.push_back(it->second);
      }
    }
    return Status::Ok();
  }

  // copy and bitcast (see ParseInstruction): only between row-major layouts, where they move
  // no element; a layout change is a transpose that the text does not spell out.
  Status ResolveLayoutOps() {
    for (const LayoutOp& op : layout_ops_) {
      Instruction& instr = *op.instr;
      if (op.name == "select-and-scatter" || op.name == "reduce" || op.name == "reduce-window" ||
          op.name == "sort" || op.name == "topk" || op.name == "compare") {
        const size_t before = op.computation->instructions().size();
        DETRAIN_RETURN_IF_ERROR(ExpandMany(op));
        // Each expansion is bounded (a window of 4096, a combiner of 256 instructions); so is
        // their sum, so that a file of many cannot grow the graph without limit.
        expanded_ += op.computation->instructions().size() - before;
        if (expanded_ > kMaxExpandedInstructions) {
          return Cursor::ErrorAt(op.loc,
                                 "select-and-scatter, sort, topk and reduces of several "
                                 "inputs expand to more than " +
                                     std::to_string(kMaxExpandedInstructions) +
                                     " instructions in this module");
        }
        continue;
      }
      if (op.name != "copy" && op.name != "bitcast" && op.name != "is-finite") {
        DETRAIN_RETURN_IF_ERROR(UnbatchIndexing(op));
        continue;
      }
      if (instr.operands.size() != 1) {
        return Cursor::ErrorAt(
            op.loc, op.name + " takes 1 operand, got " + std::to_string(instr.operands.size()));
      }
      if (op.name == "is-finite") {
        DETRAIN_RETURN_IF_ERROR(ExpandIsFinite(op));
        continue;
      }
      const Instruction& operand = *instr.operands[0];
      if (instr.shape.is_tuple() || operand.shape.is_tuple()) {
        return Cursor::ErrorAt(op.loc, op.name + " of a tuple is not supported");
      }
      if (instr.shape.type() != operand.shape.type()) {
        if (op.name == "copy" || instr.shape.dims() != operand.shape.dims() ||
            LayoutOf(instr) != LayoutOf(operand)) {
          return Cursor::ErrorAt(op.loc, op.name + " " + Quoted(instr.name) +
                                             " changes the element type" +
                                             (op.name == "copy" ? "" : " and the dimensions"));
        }
        instr.opcode = Opcode::kBitcastConvert;
        continue;
      }
      if (op.name == "copy") {
        // A copy changes the layout, never the value: the identity whatever the layouts.
        if (instr.shape.dims() != operand.shape.dims()) {
          return Cursor::ErrorAt(op.loc, "copy " + Quoted(instr.name) + " changes the dimensions");
        }
        continue;
      }
      DETRAIN_RETURN_IF_ERROR(ExpandBitcast(op));
    }
    layout_ops_.clear();
    return Status::Ok();
  }

  // An instruction's layout, minor to major: row-major unless its text said otherwise; empty
  // for a layout that is not a plain permutation.
  std::vector<int64_t> LayoutOf(const Instruction& instr) const {
    auto it = other_layout_.find(&instr);
    if (it != other_layout_.end()) return it->second;
    std::vector<int64_t> m2m;
    for (int64_t d = instr.shape.rank() - 1; d >= 0; --d) m2m.push_back(d);
    return m2m;
  }

  // bitcast: the transposes and reshape of layouts.cc between the two layouts.
  Status ExpandBitcast(const LayoutOp& op) {
    Instruction& instr = *op.instr;
    Status st = parser_internal::ExpandBitcast(*op.computation, instr, LayoutOf(*instr.operands[0]),
                                               LayoutOf(instr));
    if (!st.ok()) return Cursor::ErrorAt(op.loc, "bitcast " + Quoted(instr.name) + st.message());
    return Status::Ok();
  }

  // select-and-scatter: its select and scatter computations (defined before it, as XLA prints
  // them) looked up by name, then the expansion of select_and_scatter.cc.
  Status ExpandSelectScatter(const LayoutOp& op) {
    Instruction& instr = *op.instr;
    const Computation* parts[2] = {nullptr, nullptr};
    const Attr attrs[2] = {Attr::kSelect, Attr::kScatter};
    for (int i = 0; i < 2; ++i) {
      auto ref = std::find_if(comp_refs_.begin(), comp_refs_.end(), [&](const ComputationRef& r) {
        return r.instr == &instr && r.attr == attrs[i];
      });
      if (ref == comp_refs_.end()) {
        return Cursor::ErrorAt(
            op.loc, "select-and-scatter needs " + std::string(i == 0 ? "select" : "scatter") + "=");
      }
      auto it = computations_.find(ref->name);
      if (it == computations_.end()) {
        return Cursor::ErrorAt(ref->loc, "unknown computation " + Quoted(ref->name) +
                                             " (a select-and-scatter's computations come "
                                             "before it)");
      }
      parts[i] = it->second;
      comp_refs_.erase(ref);
    }
    for (const auto& [a, value] : instr.attrs) {
      if (a != Attr::kWindow && a != Attr::kSelect && a != Attr::kScatter) {
        return Cursor::ErrorAt(
            op.loc, "select-and-scatter takes no attribute " + Quoted(std::string(AttrName(a))));
      }
    }
    Status st =
        parser_internal::ExpandSelectAndScatter(*op.computation, instr, *parts[0], *parts[1]);
    if (!st.ok()) {
      return Cursor::ErrorAt(op.loc,
                             "select-and-scatter " + Quoted(instr.name) + ": " + st.message());
    }
    return Status::Ok();
  }

  // The expansions that may add many instructions (the budget of ResolveLayoutOps).
  Status ExpandMany(const LayoutOp& op) {
    Instruction& instr = *op.instr;
    Status st = Status::Ok();
    if (op.name == "select-and-scatter") return ExpandSelectScatter(op);
    if (op.name == "reduce" || op.name == "reduce-window") return ExpandReduceOfMany(op);
    if (op.name == "compare") {
      st = parser_internal::ExpandTotalOrderCompare(*op.computation, instr);
    } else if (op.name == "topk" && called_.count(&instr)) {
      const auto& [name, loc] = called_.at(&instr);
      auto it = computations_.find(name);
      if (it == computations_.end()) {
        return Cursor::ErrorAt(
            loc, "unknown computation " + Quoted(name) + " (a TopK's comparator comes before it)");
      }
      const Shape& r = instr.shape;
      const int64_t k = r.is_tuple() && !r.tuple_elements().empty() &&
                                !r.tuple_elements()[0].is_tuple() &&
                                r.tuple_elements()[0].rank() > 0
                            ? r.tuple_elements()[0].dims().back()
                            : -1;
      if (k < 0) return Cursor::ErrorAt(op.loc, "TopK must give (values, indices)");
      st = parser_internal::ExpandTopK(*op.computation, instr, k, true, it->second);
    } else if (op.name == "topk") {
      auto args = topk_args_.find(&instr);
      if (args == topk_args_.end() || args->second.k < 0) {
        return Cursor::ErrorAt(op.loc, "topk needs k=");
      }
      st =
          parser_internal::ExpandTopK(*op.computation, instr, args->second.k, args->second.largest);
    } else {
      auto ref = std::find_if(comp_refs_.begin(), comp_refs_.end(), [&](const ComputationRef& r) {
        return r.instr == &instr && r.attr == Attr::kToApply;
      });
      if (ref == comp_refs_.end()) return Cursor::ErrorAt(op.loc, "sort needs to_apply=");
      auto it = computations_.find(ref->name);
      if (it == computations_.end()) {
        return Cursor::ErrorAt(ref->loc, "unknown computation " + Quoted(ref->name) +
                                             " (a sort needs its comparator before it)");
      }
      comp_refs_.erase(ref);
      st = parser_internal::ExpandSort(*op.computation, instr, *it->second);
    }
    if (!st.ok()) {
      return Cursor::ErrorAt(op.loc, op.name + " " + Quoted(instr.name) + ": " + st.message());
    }
    return Status::Ok();
  }

  // A reduce of several inputs: its to_apply looked up by name (defined before it, as XLA
  // prints it), then the expansion of variadic_reduce.cc.
  Status ExpandReduceOfMany(const LayoutOp& op) {
    Instruction& instr = *op.instr;
    auto ref = std::find_if(comp_refs_.begin(), comp_refs_.end(), [&](const ComputationRef& r) {
      return r.instr == &instr && r.attr == Attr::kToApply;
    });
    if (ref == comp_refs_.end()) return Cursor::ErrorAt(op.loc, op.name + " needs to_apply=");
    auto it = computations_.find(ref->name);
    if (it == computations_.end()) {
      return Cursor::ErrorAt(ref->loc, "unknown computation " + Quoted(ref->name) +
                                           " (a reduce of several inputs needs its to_apply "
                                           "before it)");
    }
    comp_refs_.erase(ref);
    Status st = parser_internal::ExpandVariadicReduce(*op.computation, instr, *it->second);
    if (!st.ok()) {
      return Cursor::ErrorAt(op.loc, op.name + " " + Quoted(instr.name) + " of " +
                                         std::to_string(instr.operands.size() / 2) +
                                         " inputs: " + st.message());
    }
    return Status::Ok();
  }

  // is-finite(x) as compare(subtract(x, x), broadcast(0), direction=EQ): finite x gives +0,
  // an infinity or NaN gives NaN, which compares unequal.
  Status ExpandIsFinite(const LayoutOp& op) {
    Instruction& instr = *op.instr;
    Instruction* x = instr.operands[0];
    const Shape& shape = x->shape;
    if (shape.is_tuple() || shape.type() != ElementType::kF32) {
      return Cursor::ErrorAt(op.loc, "is-finite takes an f32 array");
    }
    if (instr.shape.is_tuple() || instr.shape.type() != ElementType::kPred ||
        instr.shape.dims() != shape.dims()) {
      return Cursor::ErrorAt(op.loc, "is-finite gives a pred array of its operand's dimensions");
    }
    Computation& comp = *op.computation;
    auto add = [&](Opcode opcode, Shape result, std::vector<Instruction*> operands,
                   const std::string& suffix) {
      return parser_internal::AddBeside(comp, instr, opcode, std::move(result), std::move(operands),
                                        suffix);
    };
    Instruction* difference = add(Opcode::kSubtract, shape, {x, x}, ".x-x");
    Instruction* zero = add(Opcode::kConstant, Shape(ElementType::kF32, {}), {}, ".zero");
    zero->literal = Literal::Scalar<float>(ElementType::kF32, 0.0f);
    Instruction* zeros = add(Opcode::kBroadcast, shape, {zero}, ".zeros");
    zeros->attrs[Attr::kDimensions].ints = {};
    instr.operands = {difference, zeros};
    instr.attrs[Attr::kDirection].direction = Direction::kEq;
    return Status::Ok();
  }

  // A gather or scatter with batching dimensions (StableHLO's operand_batching_dims and
  // start_indices_batching_dims; input_batching_dims and scatter_indices_batching_dims) as an
  // unbatched one: batching dimension k of the operand is indexed by the position along the
  // paired dimension of the indices, so that position joins the index vector (an iota along that
  // dimension, concatenated to the indices along index_vector_dim), the operand dimension joins
  // start_index_map (scatter_dims_to_operand_dims) and, being of slice size 1, the collapsed
  // (inserted window) dimensions. Every element moves exactly as before: the same op, new indices.
  Status UnbatchIndexing(const LayoutOp& op) {
    Instruction& instr = *op.instr;
    const bool gather = instr.opcode == Opcode::kGather;
    if (!gather && instr.opcode != Opcode::kScatter) {
      return Cursor::ErrorAt(op.loc,
                             "batching dimensions are attributes of gather and scatter, "
                             "not of " +
                                 std::string(OpcodeName(instr.opcode)));
    }
    const Attr operand_attr = gather ? Attr::kOperandBatchingDims : Attr::kInputBatchingDims;
    const Attr indices_attr =
        gather ? Attr::kStartIndicesBatchingDims : Attr::kScatterIndicesBatchingDims;
    const Attr wrong_a = gather ? Attr::kInputBatchingDims : Attr::kOperandBatchingDims;
    const Attr wrong_b =
        gather ? Attr::kScatterIndicesBatchingDims : Attr::kStartIndicesBatchingDims;
    for (Attr a : {wrong_a, wrong_b}) {
      if (instr.attrs.count(a)) {
        return Cursor::ErrorAt(op.loc, std::string(AttrName(a)) + " is not an attribute of " +
                                           std::string(OpcodeName(instr.opcode)));
      }
    }
    const std::string what = std::string(OpcodeName(instr.opcode)) + " " + Quoted(instr.name);
    const size_t want_operands = gather ? 2 : 3;
    if (instr.operands.size() != want_operands) {
      return Cursor::ErrorAt(op.loc, what + " takes " + std::to_string(want_operands) +
                                         " operands, got " + std::to_string(instr.operands.size()));
    }
    const std::vector<int64_t> operand_dims = instr.attrs[operand_attr].ints;
    const std::vector<int64_t> indices_dims = instr.attrs[indices_attr].ints;
    instr.attrs.erase(operand_attr);
    instr.attrs.erase(indices_attr);
    const Shape& operand = instr.operands[0]->shape;
    Instruction* indices = instr.operands[1];
    if (operand.is_tuple() || indices->shape.is_tuple() || !IsInteger(indices->shape.type())) {
      return Cursor::ErrorAt(op.loc,
                             what + ": batching needs an array operand and integer indices");
    }
    if (operand_dims.size() != indices_dims.size()) {
      return Cursor::ErrorAt(op.loc, what + ": " + std::to_string(operand_dims.size()) + " " +
                                         std::string(AttrName(operand_attr)) + " but " +
                                         std::to_string(indices_dims.size()) + " " +
                                         std::string(AttrName(indices_attr)));
    }
    if (!instr.attrs.count(Attr::kIndexVectorDim)) {
      return Cursor::ErrorAt(op.loc, what + " needs index_vector_dim");
    }
    const int64_t ivd = instr.attrs[Attr::kIndexVectorDim].i;
    std::vector<int64_t> dims = indices->shape.dims();
    if (ivd < 0 || ivd > static_cast<int64_t>(dims.size())) {
      return Cursor::ErrorAt(op.loc, what + ": index_vector_dim " + std::to_string(ivd) +
                                         " is outside the indices' " + std::to_string(dims.size()) +
                                         " dimensions");
    }
    std::set<int64_t> seen_operand, seen_indices;
    for (size_t k = 0; k < operand_dims.size(); ++k) {
      const int64_t o = operand_dims[k], x = indices_dims[k];
      if (o < 0 || o >= operand.rank() || !seen_operand.insert(o).second) {
        return Cursor::ErrorAt(op.loc, what + ": " + std::string(AttrName(operand_attr)) +
                                           " must be distinct dimensions of the operand");
      }
      if (x < 0 || x >= static_cast<int64_t>(dims.size()) || x == ivd ||
          !seen_indices.insert(x).second) {
        return Cursor::ErrorAt(op.loc, what + ": " + std::string(AttrName(indices_attr)) +
                                           " must be distinct dimensions of the indices other "
                                           "than index_vector_dim");
      }
      if (operand.dim(static_cast<int>(o)) != dims[static_cast<size_t>(x)]) {
        return Cursor::ErrorAt(op.loc, what + ": batching dimension " + std::to_string(o) +
                                           " of the operand has size " +
                                           std::to_string(operand.dim(static_cast<int>(o))) +
                                           ", its indices dimension " + std::to_string(x) + " " +
                                           std::to_string(dims[static_cast<size_t>(x)]));
      }
    }
    if (operand_dims.empty()) return Status::Ok();
    Computation& comp = *op.computation;
    auto add = [&](Opcode opcode, Shape result, std::vector<Instruction*> operands,
                   const std::string& suffix) {
      return parser_internal::AddBeside(comp, instr, opcode, std::move(result), std::move(operands),
                                        suffix);
    };
    const ElementType type = indices->shape.type();
    if (ivd == static_cast<int64_t>(dims.size())) {  // an implicit trailing index vector of 1
      dims.push_back(1);
      indices = add(Opcode::kReshape, Shape(type, dims), {indices}, ".indices");
    }
    std::vector<Instruction*> parts = {indices};
    std::vector<int64_t> one = dims;
    one[static_cast<size_t>(ivd)] = 1;
    for (size_t k = 0; k < indices_dims.size(); ++k) {
      Instruction* iota = add(Opcode::kIota, Shape(type, one), {}, ".batch" + std::to_string(k));
      iota->attrs[Attr::kIotaDimension].i = indices_dims[k];
      parts.push_back(iota);
    }
    dims[static_cast<size_t>(ivd)] += static_cast<int64_t>(indices_dims.size());
    Instruction* joined = add(Opcode::kConcatenate, Shape(type, dims), parts, ".batched-indices");
    joined->attrs[Attr::kDimensions].ints = {ivd};
    instr.operands[1] = joined;
    const Attr map_attr = gather ? Attr::kStartIndexMap : Attr::kScatterDimsToOperandDims;
    const Attr collapsed_attr = gather ? Attr::kCollapsedSliceDims : Attr::kInsertedWindowDims;
    std::vector<int64_t>& map = instr.attrs[map_attr].ints;
    map.insert(map.end(), operand_dims.begin(), operand_dims.end());
    std::vector<int64_t>& collapsed = instr.attrs[collapsed_attr].ints;
    collapsed.insert(collapsed.end(), operand_dims.begin(), operand_dims.end());
    std::sort(collapsed.begin(), collapsed.end());
    return Status::Ok();
  }

  // Drops XLA's `.<id>` suffix from parameter names; see parser.h.
  static Status NameParameters(Computation& comp) {
    std::set<std::string> used;
    for (Instruction* p : comp.Parameters()) {
      std::string name = p->name;
      size_t dot = name.rfind('.');
      if (dot != std::string::npos && dot + 1 < name.size() &&
          name.find_first_not_of("0123456789", dot + 1) == std::string::npos) {
        name.resize(dot);
      }
      if (!IsValidParameterName(name) || used.count(name)) {
        name = "p" + std::to_string(p->parameter_number);
      }
      if (used.count(name)) {
        return Cursor::ErrorAt(p->loc, "cannot give parameter '" + p->name + "' a unique name");
      }
      used.insert(name);
      p->name = name;
    }
    return Status::Ok();
  }

  Cursor cur_;
  std::unique_ptr<Module> module_;
  // copy / bitcast / is-finite instructions of the computation being parsed, and every one whose
  // shape carried a layout other than row-major.
  std::vector<LayoutOp> layout_ops_;
  static constexpr size_t kMaxExpandedInstructions = size_t{1} << 18;
  size_t expanded_ = 0;
  std::set<const Instruction*> total_order_;  // compares with type=TOTALORDER
  struct TopKArgs {
    int64_t k = -1;
    bool largest = true;
  };
  std::map<const Instruction*, TopKArgs> topk_args_;
  std::map<const Instruction*, std::pair<std::string, SourceLoc>> called_;  // TopK comparators
  std::map<const Instruction*, HalfFormat> half_;  // instructions parsed with bf16/f16 shapes
  // Instructions whose shape has a layout other than row-major: its minor-to-major order, or
  // empty where it is not a plain permutation (tiles...). Only bitcast reads them.
  std::map<const Instruction*, std::vector<int64_t>> other_layout_;
  std::map<std::string, Computation*> computations_;
  std::vector<ComputationRef> comp_refs_;
};

}  // namespace

Result<std::unique_ptr<Module>> ParseModule(std::string_view text) {
  DETRAIN_RETURN_IF_ERROR(Cursor::CheckNoNul(text));
  return Parser(text).Parse();
}

}  // namespace detrain::ir
