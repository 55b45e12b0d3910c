# graphsplit_add_plugin(NAME <name> KIND engine|pass|partitioner SOURCES <file>...
#                       [DATA <file>...] [LINK <library>...]
#                       [TESTS <file>...] [TEST_LINK <library>...] [TEST_NEEDS <plugin>...] [TEST_LABEL <label>]
#                       [CONFORMANCE])
#
# The one place a plugin is declared, with its tests. Builds an OBJECT library gsplugin_<name>_objects (for unit
# tests; src/ is on its include path) and the MODULE libgsplugin_<name>.so with the link hygiene the host relies
# on: hidden visibility (inlines too), -z defs, --exclude-libs,ALL, a version script exporting only the entry
# symbol, and RUNPATH $ORIGIN. The sources see GS_PLUGIN_NAME ("<name>"), so that the name is written once:
# GS_DEFINE_THIS_PLUGIN and GS_PLUGIN_DATA_FILE use it. DATA files are copied beside the library as
# <name>.<file name> (GS_PLUGIN_DATA_FILE("ops.toml") names the op table that way). LINK adds vendor libraries
# (graphsplit::kernels for engines on the shared CPU kernels). A plugin links graphsplit::sdk and such
# libraries only; linking the framework or another static library of ours is refused.
#
# Tests (skipped when GRAPHSPLIT_BUILD_TESTS is OFF): TESTS builds <name>_tests from those files, linked with the
# plugin's objects, GoogleTest and TEST_LINK, with GRAPHSPLIT_PLUGIN_DIR defined as the folder the plugin is
# built into; TEST_NEEDS names other plugins the tests load. CONFORMANCE (engines) builds <name>_conformance,
# the shared engine conformance suite run on the built .so, and links the unit tests with it too (load_table()).
get_filename_component(_GRAPHSPLIT_PLUGIN_CMAKE_DIR "${CMAKE_CURRENT_LIST_FILE}" DIRECTORY)
if(NOT DEFINED GRAPHSPLIT_PLUGIN_OUTPUT_DIR)
  set(GRAPHSPLIT_PLUGIN_OUTPUT_DIR "${CMAKE_BINARY_DIR}/lib/graphsplit/plugins")
endif()
if(NOT DEFINED GRAPHSPLIT_PLUGIN_INSTALL_DIR)
  set(GRAPHSPLIT_PLUGIN_INSTALL_DIR "lib/graphsplit/plugins")
endif()

function(graphsplit_add_plugin)
  cmake_parse_arguments(P "CONFORMANCE" "NAME;KIND;TEST_LABEL" "SOURCES;DATA;LINK;TESTS;TEST_LINK;TEST_NEEDS"
                        ${ARGN})
  if(NOT P_NAME OR NOT P_KIND OR NOT P_SOURCES)
    message(FATAL_ERROR "graphsplit_add_plugin needs NAME, KIND and SOURCES")
  endif()
  if(NOT P_KIND MATCHES "^(engine|pass|partitioner)$")
    message(FATAL_ERROR "graphsplit_add_plugin(${P_NAME}): KIND must be engine, pass or partitioner")
  endif()
  set(obj gsplugin_${P_NAME}_objects)
  set(mod gsplugin_${P_NAME})
  add_library(${obj} OBJECT ${P_SOURCES})
  target_link_libraries(${obj} PUBLIC graphsplit::sdk ${P_LINK})
  target_compile_definitions(${obj} PUBLIC GS_PLUGIN_NAME="${P_NAME}")
  if(IS_DIRECTORY "${CMAKE_CURRENT_SOURCE_DIR}/src")
    target_include_directories(${obj} PUBLIC "${CMAKE_CURRENT_SOURCE_DIR}/src")
  endif()
  set_target_properties(${obj} PROPERTIES
    POSITION_INDEPENDENT_CODE ON
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  add_library(${mod} MODULE $<TARGET_OBJECTS:${obj}>)
  target_link_libraries(${mod} PRIVATE graphsplit::sdk ${P_LINK})
  set_target_properties(${mod} PROPERTIES
    PREFIX "lib"
    OUTPUT_NAME gsplugin_${P_NAME}
    LIBRARY_OUTPUT_DIRECTORY "${GRAPHSPLIT_PLUGIN_OUTPUT_DIR}"
    INSTALL_RPATH "$ORIGIN;$ORIGIN/../.."
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  target_link_options(${mod} PRIVATE
    "LINKER:-z,defs"
    "LINKER:--exclude-libs,ALL"
    "LINKER:--version-script=${_GRAPHSPLIT_PLUGIN_CMAKE_DIR}/plugin.map")
  foreach(data ${P_DATA})
    get_filename_component(data_name "${data}" NAME)
    get_filename_component(data_abs "${data}" ABSOLUTE)
    set(dest "${GRAPHSPLIT_PLUGIN_OUTPUT_DIR}/${P_NAME}.${data_name}")
    add_custom_command(OUTPUT "${dest}" COMMAND ${CMAKE_COMMAND} -E copy "${data_abs}" "${dest}"
                       DEPENDS "${data_abs}" COMMENT "plugin ${P_NAME}: ${data_name}")
    add_custom_target(${mod}_data_${data_name} ALL DEPENDS "${dest}")
    add_dependencies(${mod} ${mod}_data_${data_name})
    if(NOT GRAPHSPLIT_PLUGIN_NO_INSTALL)
      install(FILES "${data_abs}" DESTINATION "${GRAPHSPLIT_PLUGIN_INSTALL_DIR}" RENAME "${P_NAME}.${data_name}")
    endif()
  endforeach()
  if(NOT GRAPHSPLIT_PLUGIN_NO_INSTALL)
    install(TARGETS ${mod} LIBRARY DESTINATION "${GRAPHSPLIT_PLUGIN_INSTALL_DIR}")
    set_property(GLOBAL APPEND PROPERTY GRAPHSPLIT_INSTALLED_PLUGINS ${mod})
  endif()
  if(DEFINED GRAPHSPLIT_BUILD_TESTS AND NOT GRAPHSPLIT_BUILD_TESTS)
    # no tests
  elseif(P_TESTS OR P_CONFORMANCE)
    _graphsplit_plugin_tests()
  endif()
  cmake_language(EVAL CODE "cmake_language(DEFER DIRECTORY [[${CMAKE_SOURCE_DIR}]] CALL _graphsplit_check_plugin_links [[${mod}]])")
  cmake_language(EVAL CODE "cmake_language(DEFER DIRECTORY [[${CMAKE_SOURCE_DIR}]] CALL _graphsplit_check_plugin_links [[${obj}]])")
endfunction()

# The tests graphsplit_add_plugin declares (it calls this with its parsed arguments in scope).
macro(_graphsplit_plugin_tests)
  if(NOT TARGET GTest::gtest)
    find_package(GTest REQUIRED)
  endif()
  include(GoogleTest)  # the project calls enable_testing() at its top (CMake ignores it inside a function)
  if(P_CONFORMANCE AND NOT TARGET graphsplit::engine_conformance)
    # Out of tree: the installed suite and what it links.
    find_package(spdlog CONFIG REQUIRED)
    find_package(tomlplusplus CONFIG REQUIRED)
    include("${_GRAPHSPLIT_PLUGIN_CMAKE_DIR}/GraphSplitConformanceTargets.cmake")
  endif()
  if(P_TESTS)
    set(_links ${obj} ${P_TEST_LINK})
    if(P_CONFORMANCE)
      list(APPEND _links graphsplit::engine_testing)
    endif()
    graphsplit_plugin_test(${P_NAME} NAME ${P_NAME}_tests SOURCES ${P_TESTS} LABEL "${P_TEST_LABEL}"
                           LINK ${_links} NEEDS ${P_TEST_NEEDS})
  endif()
  if(P_CONFORMANCE)
    set(_src "${CMAKE_CURRENT_BINARY_DIR}/${P_NAME}_conformance.cpp")
    file(GENERATE OUTPUT "${_src}" CONTENT
         "// Generated by graphsplit_add_plugin: the engine conformance suite on libgsplugin_${P_NAME}.so.\n#include \"graphsplit/testing/engine_conformance.h\"\nGS_ENGINE_CONFORMANCE(\"${P_NAME}\", \"${GRAPHSPLIT_PLUGIN_OUTPUT_DIR}\");\n")
    graphsplit_plugin_test(${P_NAME} NAME ${P_NAME}_conformance SOURCES "${_src}" LABEL conformance
                           LINK graphsplit::engine_conformance)
  endif()
endmacro()

# graphsplit_plugin_test(<plugin> NAME <executable> SOURCES <file>... [LINK <library>...] [NEEDS <plugin>...]
#                        [LABEL <label>])
# One GoogleTest executable of a plugin's tests, discovered by CTest with the label (default unit); it runs after
# libgsplugin_<plugin>.so and the NEEDS plugins are built, and sees GRAPHSPLIT_PLUGIN_DIR (and, in tree,
# GRAPHSPLIT_MODEL_DIR and tests/support on its include path).
function(graphsplit_plugin_test plugin)
  cmake_parse_arguments(T "" "NAME;LABEL" "SOURCES;LINK;NEEDS" ${ARGN})
  if(NOT T_LABEL)
    set(T_LABEL unit)
  endif()
  add_executable(${T_NAME} ${T_SOURCES})
  target_link_libraries(${T_NAME} PRIVATE ${T_LINK} GTest::gtest GTest::gtest_main)
  target_compile_definitions(${T_NAME} PRIVATE GRAPHSPLIT_PLUGIN_DIR="${GRAPHSPLIT_PLUGIN_OUTPUT_DIR}")
  if(DEFINED GRAPHSPLIT_MODEL_DIR)
    target_compile_definitions(${T_NAME} PRIVATE GRAPHSPLIT_MODEL_DIR="${GRAPHSPLIT_MODEL_DIR}")
  endif()
  if(DEFINED GRAPHSPLIT_TEST_SUPPORT_DIR)
    target_include_directories(${T_NAME} PRIVATE "${GRAPHSPLIT_TEST_SUPPORT_DIR}")
  endif()
  add_dependencies(${T_NAME} gsplugin_${plugin})
  foreach(other ${T_NEEDS})
    add_dependencies(${T_NAME} gsplugin_${other})
  endforeach()
  gtest_discover_tests(${T_NAME} PROPERTIES LABELS ${T_LABEL} DISCOVERY_TIMEOUT 60)
endfunction()

# Runs at the end of configuration, when every target_link_libraries call has been made.
function(_graphsplit_check_plugin_links target)
  get_target_property(libs ${target} LINK_LIBRARIES)
  get_target_property(ilibs ${target} INTERFACE_LINK_LIBRARIES)
  foreach(lib IN LISTS libs ilibs)
    if(lib MATCHES "graphsplit::framework|graphsplit_framework")
      message(FATAL_ERROR "plugin target ${target} links ${lib}; plugins may link graphsplit::sdk and their own vendor libraries only")
    endif()
    if(TARGET ${lib})
      get_target_property(type ${lib} TYPE)
      if(type STREQUAL "STATIC_LIBRARY" AND lib MATCHES "^graphsplit")
        message(FATAL_ERROR "plugin target ${target} links our static library ${lib}; that would give the process two copies")
      endif()
    endif()
  endforeach()
endfunction()
