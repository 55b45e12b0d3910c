# graphsplit_add_plugin(NAME <name> KIND engine|pass|partitioner SOURCES ... [DATA <file>...])
#
# Builds an OBJECT library gsplugin_<name>_objects (for unit tests) and the MODULE libgsplugin_<name>.so with the
# link hygiene the host relies on: hidden visibility (inlines too), -z defs, --exclude-libs,ALL, a version script
# exporting only the entry symbol, and RUNPATH $ORIGIN. DATA files are copied beside the library as
# <name>.<file name> (an engine's descriptor names its op table that way, e.g. "aicore.ops.toml").
# A plugin links graphsplit::sdk only; linking the framework or another static library of ours is refused.
get_filename_component(_GRAPHSPLIT_PLUGIN_CMAKE_DIR "${CMAKE_CURRENT_LIST_FILE}" DIRECTORY)
if(NOT DEFINED GRAPHSPLIT_PLUGIN_OUTPUT_DIR)
  set(GRAPHSPLIT_PLUGIN_OUTPUT_DIR "${CMAKE_BINARY_DIR}/lib/graphsplit/plugins")
endif()
if(NOT DEFINED GRAPHSPLIT_PLUGIN_INSTALL_DIR)
  set(GRAPHSPLIT_PLUGIN_INSTALL_DIR "lib/graphsplit/plugins")
endif()

function(graphsplit_add_plugin)
  cmake_parse_arguments(P "" "NAME;KIND" "SOURCES;DATA" ${ARGN})
  if(NOT P_NAME OR NOT P_KIND OR NOT P_SOURCES)
    message(FATAL_ERROR "graphsplit_add_plugin needs NAME, KIND and SOURCES")
  endif()
  if(NOT P_KIND MATCHES "^(engine|pass|partitioner)$")
    message(FATAL_ERROR "graphsplit_add_plugin(${P_NAME}): KIND must be engine, pass or partitioner")
  endif()
  set(obj gsplugin_${P_NAME}_objects)
  set(mod gsplugin_${P_NAME})
  add_library(${obj} OBJECT ${P_SOURCES})
  target_link_libraries(${obj} PUBLIC graphsplit::sdk)
  set_target_properties(${obj} PROPERTIES
    POSITION_INDEPENDENT_CODE ON
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  add_library(${mod} MODULE $<TARGET_OBJECTS:${obj}>)
  target_link_libraries(${mod} PRIVATE graphsplit::sdk)
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
  endif()
  cmake_language(EVAL CODE "cmake_language(DEFER DIRECTORY [[${CMAKE_SOURCE_DIR}]] CALL _graphsplit_check_plugin_links [[${mod}]])")
  cmake_language(EVAL CODE "cmake_language(DEFER DIRECTORY [[${CMAKE_SOURCE_DIR}]] CALL _graphsplit_check_plugin_links [[${obj}]])")
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
