// The parameter roles (param_roles.def): names round-trip, the Protobuf mapping is one to one,
// and the role properties are the ones the runtime, the mesh and run specs rely on.
#include "compiler/plan/entry_signature.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "compiler/plan/schema.h"

namespace detrain::plan {
namespace {

TEST(ParamRoles, NamesAndProtoValuesRoundTrip) {
  std::set<std::string_view> names;
  for (ParamRole role : kParamRoles) {
    EXPECT_TRUE(names.insert(ParamRoleName(role)).second) << ParamRoleName(role);
    EXPECT_EQ(ParamRoleFromName(ParamRoleName(role)), role);
    EXPECT_EQ(FromPlanRole(ToPlanRole(role)), role);
    EXPECT_EQ(static_cast<int>(ToPlanRole(role)), static_cast<int>(role));
  }
  EXPECT_EQ(kParamRoleCount, 8);
  EXPECT_FALSE(ParamRoleFromName("weights").has_value());
  // A value from a later schema reads as an input: no training meaning.
  EXPECT_EQ(FromPlanRole(static_cast<v2::ParamRole>(99)), ParamRole::kInput);
}

TEST(ParamRoles, Properties) {
  std::string state, sharded, run_spec;
  for (ParamRole role : kParamRoles) {
    const std::string name(ParamRoleName(role));
    if (IsStateRole(role)) state += name + " ";
    if (IsShardedRole(role)) sharded += name + " ";
    if (IsRunSpecRole(role)) run_spec += name + " ";
  }
  EXPECT_EQ(state, "parameter optimizer-state step ");
  EXPECT_EQ(sharded, "batch labels ");
  EXPECT_EQ(run_spec, "parameter optimizer-state step batch labels key ");
}

}  // namespace
}  // namespace detrain::plan
