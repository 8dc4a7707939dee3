// See printer.h.
#include "compiler/ir/printer.h"

#include <cctype>
#include <vector>

#include "attest/sha256.h"

namespace detrain::ir {
namespace {

std::string ParameterName(const Instruction& p, bool in_entry) {
  if (in_entry && IsValidParameterName(p.name)) return p.name;
  return "p" + std::to_string(p.parameter_number);
}

bool IsOptionalAttr(Opcode op, Attr attr) {
  for (const AttrSpec& spec : OpcodeAttrs(op)) {
    if (spec.attr == attr) return spec.optional;
  }
  return false;
}

// One instruction's line: "  [ROOT ]name = shape opcode(operands), attr=value, ...\n".
// `append_name(x, out)` appends an instruction's name, `comp_name(c)` gives a computation's.
template <typename AppendName, typename ComputationName>
void AppendInstruction(const Instruction& instr, bool is_root, const AppendName& append_name,
                       const ComputationName& comp_name, std::string* out) {
  *out += "  ";
  if (is_root) *out += "ROOT ";
  append_name(instr, out);
  *out += " = ";
  *out += instr.shape.ToString();
  *out += ' ';
  *out += OpcodeName(instr.opcode);
  *out += '(';
  if (instr.opcode == Opcode::kParameter) {
    *out += std::to_string(instr.parameter_number);
  } else if (instr.opcode == Opcode::kConstant) {
    *out += FormatLiteralValues(instr.literal);
  } else {
    for (size_t i = 0; i < instr.operands.size(); ++i) {
      if (i) *out += ", ";
      append_name(*instr.operands[i], out);
    }
  }
  *out += ')';
  for (const auto& [attr, value] : instr.attrs) {  // all but optional ones at their default
    if (IsOptionalAttr(instr.opcode, attr) && IsDefaultAttrValue(attr, value)) continue;
    *out += ", ";
    *out += AttrName(attr);
    *out += '=';
    *out += FormatAttrValue(attr, value, comp_name);
  }
  *out += '\n';
}

}  // namespace

bool IsValidParameterName(std::string_view name) {
  if (name.empty() || !(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_')) {
    return false;
  }
  for (char c : name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-')) {
      return false;
    }
  }
  if (name == "ENTRY" || name == "ROOT" || name == "HloModule") return false;
  size_t dot = name.rfind('.');
  if (dot != std::string_view::npos) {
    std::string_view tail = name.substr(dot + 1);
    bool all_digits = !tail.empty();
    for (char c : tail) all_digits = all_digits && std::isdigit(static_cast<unsigned char>(c));
    if (all_digits) return false;
  }
  return true;
}

Result<CanonicalNames> ComputeCanonicalNames(const Module& module) {
  DETRAIN_ASSIGN_OR_RETURN(Module::Order order, module.CanonicalOrder());
  CanonicalNames names;
  int region = 0;
  for (size_t ci = 0; ci < order.computations.size(); ++ci) {
    const Computation* c = order.computations[ci];
    const std::vector<const Instruction*>& instrs = order.instructions[ci];
    bool is_entry = c == module.entry();
    names.computations[c] = is_entry ? "main" : "region." + std::to_string(region++);
    int k = 0;
    for (const Instruction* instr : instrs) {
      names.instructions[instr] =
          instr->opcode == Opcode::kParameter
              ? ParameterName(*instr, is_entry)
              : std::string(OpcodeName(instr->opcode)) + "." + std::to_string(k++);
    }
  }
  return names;
}

// PrintModule names instructions as ComputeCanonicalNames does, without building its maps: an
// instruction's name is its parameter name or "opcode.k", k its rank among the non-parameters
// of its computation's canonical order, kept in a table indexed by instruction id.
Result<std::string> PrintModule(const Module& module) {
  DETRAIN_ASSIGN_OR_RETURN(Module::Order order, module.CanonicalOrder());
  return PrintModule(module, order);
}

std::string PrintModule(const Module& module, const Module::Order& order) {
  const std::vector<const Computation*>& comps = order.computations;
  std::map<const Computation*, std::string> comp_names;
  int region = 0;
  for (const Computation* c : comps) {
    comp_names[c] = c == module.entry() ? "main" : "region." + std::to_string(region++);
  }
  auto comp_name = [&](const Computation* c) {
    auto it = comp_names.find(c);
    return it == comp_names.end() ? std::string("<unknown>") : it->second;
  };
  std::string out = "HloModule " + module.name() + "\n";
  std::vector<int64_t> rank;  // by id: -1 unnamed, -2 a parameter, else k of "opcode.k"
  for (size_t ci = 0; ci < comps.size(); ++ci) {
    const Computation* c = comps[ci];
    const std::vector<const Instruction*>& instrs = order.instructions[ci];
    const bool is_entry = c == module.entry();
    out += "\n";
    if (is_entry) out += "ENTRY ";
    out += comp_names.at(c) + " {\n";
    rank.assign(c->instructions().size(), -1);
    int64_t k = 0;
    for (const Instruction* instr : instrs) {
      rank[static_cast<size_t>(instr->id)] = instr->opcode == Opcode::kParameter ? -2 : k++;
    }
    auto append_name = [&](const Instruction& x, std::string* line) {
      const int64_t r = rank[static_cast<size_t>(x.id)];  // PostOrder checked every id
      if (r == -2) {
        *line += ParameterName(x, is_entry);
      } else if (r >= 0) {
        *line += OpcodeName(x.opcode);
        *line += '.';
        *line += std::to_string(r);
      } else {
        *line += "<unknown>";
      }
    };
    for (const Instruction* instr : instrs) {
      AppendInstruction(*instr, instr == c->root(), append_name, comp_name, &out);
    }
    out += "}\n";
  }
  return out;
}

std::string PrintInstruction(const Instruction& instr, bool is_root, const CanonicalNames& names) {
  auto append_name = [&](const Instruction& x, std::string* out) {
    auto it = names.instructions.find(&x);
    *out += it == names.instructions.end() ? "<unknown>" : it->second;
  };
  auto comp_name = [&](const Computation* c) {
    auto it = names.computations.find(c);
    return it == names.computations.end() ? std::string("<unknown>") : it->second;
  };
  std::string line;
  AppendInstruction(instr, is_root, append_name, comp_name, &line);
  return line.substr(2, line.size() - 3);  // without the indentation and the newline
}

Result<std::string> ModuleFingerprint(const Module& module) {
  DETRAIN_ASSIGN_OR_RETURN(std::string text, PrintModule(module));
  return attest::Sha256Hex(text);
}

}  // namespace detrain::ir
