// See printer.h.
#include "compiler/ir/printer.h"

#include <cctype>

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

void AppendInstruction(const Instruction& instr, bool is_root, const CanonicalNames& names,
                       std::string* out) {
  *out += "  ";
  if (is_root) *out += "ROOT ";
  *out += names.instructions.at(&instr) + " = " + instr.shape.ToString() + " ";
  *out += OpcodeName(instr.opcode);
  *out += '(';
  if (instr.opcode == Opcode::kParameter) {
    *out += std::to_string(instr.parameter_number);
  } else if (instr.opcode == Opcode::kConstant) {
    *out += FormatLiteralValues(instr.literal);
  } else {
    for (size_t i = 0; i < instr.operands.size(); ++i) {
      if (i) *out += ", ";
      auto it = names.instructions.find(instr.operands[i]);
      *out += it == names.instructions.end() ? "<unknown>" : it->second;
    }
  }
  *out += ')';
  auto comp_name = [&](const Computation* c) {
    auto it = names.computations.find(c);
    return it == names.computations.end() ? std::string("<unknown>") : it->second;
  };
  for (const auto& [attr, value] : instr.attrs) {
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
  DETRAIN_ASSIGN_OR_RETURN(auto comps, module.ComputationPostOrder());
  CanonicalNames names;
  int region = 0;
  for (const Computation* c : comps) {
    bool is_entry = c == module.entry();
    names.computations[c] = is_entry ? "main" : "region." + std::to_string(region++);
    DETRAIN_ASSIGN_OR_RETURN(auto instrs, c->PostOrder());
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

Result<std::string> PrintModule(const Module& module) {
  DETRAIN_ASSIGN_OR_RETURN(CanonicalNames names, ComputeCanonicalNames(module));
  DETRAIN_ASSIGN_OR_RETURN(auto comps, module.ComputationPostOrder());
  std::string out = "HloModule " + module.name() + "\n";
  for (const Computation* c : comps) {
    out += "\n";
    if (c == module.entry()) out += "ENTRY ";
    out += names.computations.at(c) + " {\n";
    DETRAIN_ASSIGN_OR_RETURN(auto instrs, c->PostOrder());
    for (const Instruction* instr : instrs) {
      AppendInstruction(*instr, instr == c->root(), names, &out);
    }
    out += "}\n";
  }
  return out;
}

std::string PrintInstruction(const Instruction& instr, bool is_root, const CanonicalNames& names) {
  std::string line;
  AppendInstruction(instr, is_root, names, &line);
  return line.substr(2, line.size() - 3);  // without the indentation and the newline
}

Result<std::string> ModuleFingerprint(const Module& module) {
  DETRAIN_ASSIGN_OR_RETURN(std::string text, PrintModule(module));
  return attest::Sha256Hex(text);
}

}  // namespace detrain::ir
