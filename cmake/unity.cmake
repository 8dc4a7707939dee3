# Which sources a unity build (DETRAIN_UNITY_BUILD, docs/ci.md) leaves out of the batches.
#
# A batch is one translation unit, so its files share one anonymous namespace per namespace and
# one preprocessor state. Three kinds of source stay on their own:
#   - generated sources (the protobuf plan, the embedded CUDA headers): large, not ours;
#   - a source that switches the instruction set for its code (`#pragma GCC target`, `#pragma
#     clang attribute`): in a batch the switch would also cover the inline functions of headers
#     that the file includes first, or miss those another file included before it; found by
#     reading each source, so a new ISA file needs no entry;
#   - DETRAIN_UNITY_SOLO below: a source whose internal helper has the same name and signature as
#     one in another source of its target (a redefinition error in a batch). Renaming the helper
#     and removing the entry is the better fix; an entry is the one that touches no source.
#     A path listed here that no target compiles is reported at configure time.
set(DETRAIN_UNITY_SOLO
  src/compiler/interp/eval_linalg.cc          # Contains (also eval_indexing.cc)
  src/compiler/codegen/cuda/emit_linalg.cc    # Num (also emit_reduce.cc)
  src/compiler/codegen/cuda/emit_movement.cc  # Num
  src/runtime/cpu/kernels_indexing.cc         # Bad (also kernels.cc)
  src/runtime/cpu/kernels_movement.cc         # Bad
  src/runtime/cpu/kernels_while.cc            # Bad
  src/evidence/report/report.cc               # kLimit (also inspect.cc)
  tests/compiler/ir/hostile_test.cc           # a function Module() hides ir::Module
  tests/compiler/semantics/convert_test.cc    # kInf (also scalar_test.cc)
  tests/compiler/semantics/half_round_test.cc # Bits (also scalar_test.cc)
  tests/frontend/autodiff/vjp_reduce_test.cc  # Sq (also vjp_movement_test.cc)
)

# detrain_unity_exclusions(DIR): marks the sources above SKIP_UNITY_BUILD_INCLUSION in every
# target defined in DIR and below it.
function(detrain_unity_exclusions dir)
  set(solo "")
  foreach(rel IN LISTS DETRAIN_UNITY_SOLO)
    list(APPEND solo ${CMAKE_SOURCE_DIR}/${rel})
  endforeach()
  set(seen "")
  _detrain_unity_walk(${dir})
  foreach(path IN LISTS solo)
    if(NOT path IN_LIST seen)
      file(RELATIVE_PATH rel ${CMAKE_SOURCE_DIR} ${path})
      message(WARNING "cmake/unity.cmake: ${rel} is listed in DETRAIN_UNITY_SOLO but no target "
                      "compiles it (moved or removed?): update the list")
    endif()
  endforeach()
endfunction()

macro(_detrain_unity_walk dir)
  get_property(_targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  foreach(target IN LISTS _targets)
    _detrain_unity_target(${target})
  endforeach()
  get_property(_subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(sub IN LISTS _subdirs)
    _detrain_unity_walk(${sub})
  endforeach()
endmacro()

macro(_detrain_unity_target target)
  get_target_property(_type ${target} TYPE)
  if(NOT _type STREQUAL "INTERFACE_LIBRARY" AND NOT _type STREQUAL "UTILITY")
    get_target_property(_sources ${target} SOURCES)
    get_target_property(_source_dir ${target} SOURCE_DIR)
    foreach(source IN LISTS _sources)
      if(source MATCHES "\\.(cc|cpp|cxx)$")
        cmake_path(ABSOLUTE_PATH source BASE_DIRECTORY ${_source_dir} NORMALIZE
                   OUTPUT_VARIABLE _path)
        get_source_file_property(_generated ${_path} TARGET_DIRECTORY ${target} GENERATED)
        set(_skip OFF)
        if(_generated OR NOT EXISTS ${_path})
          set(_skip ON)
        elseif(_path IN_LIST solo)
          set(_skip ON)
          list(APPEND seen ${_path})
        else()
          file(STRINGS ${_path} _isa
               REGEX "^[ \t]*#[ \t]*pragma[ \t]+(GCC[ \t]+target|clang[ \t]+attribute)")
          if(_isa)
            set(_skip ON)
          endif()
        endif()
        if(_skip)
          set_source_files_properties(${_path} TARGET_DIRECTORY ${target}
                                      PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
        endif()
      endif()
    endforeach()
  endif()
endmacro()
