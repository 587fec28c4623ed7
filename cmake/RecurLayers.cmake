#===- cmake/RecurLayers.cmake - layers compiled by recurc at build time ---===#
#
# recur_compile_layers(NAME SPEC LAYERS <layer>... [DEFINES <NAME=VALUE>...]
#                      [OPTIONS <recurc option>...])
# compiles each listed layer of SPEC (a path relative to the calling
# directory) for the CPU into ${CMAKE_CURRENT_BINARY_DIR}/NAME (NAME/<layer>.o
# and NAME/<layer>.h, nothing else), and sets NAME_OBJECTS (objects and
# headers, for add_executable) and NAME_DIR (for target_include_directories)
# in the caller's scope. Used by the training and inference programs, the
# benchmarks and the invariant tests.
#
#===-----------------------------------------------------------------------===#

function(recur_compile_layers name spec)
  cmake_parse_arguments(ARG "" "" "LAYERS;DEFINES;OPTIONS" ${ARGN})
  set(dir ${CMAKE_CURRENT_BINARY_DIR}/${name})
  set(defines)
  foreach(define IN LISTS ARG_DEFINES)
    list(APPEND defines -D ${define})
  endforeach()
  get_filename_component(source ${spec} ABSOLUTE)
  # --layer=<the list>, so that NAME/ holds the listed layers only: a header
  # of another layer of the spec, compiled with these sizes, must not shadow
  # the one another call compiles with its own.
  set(files)
  foreach(layer IN LISTS ARG_LAYERS)
    set_source_files_properties(${dir}/${layer}.o PROPERTIES
      EXTERNAL_OBJECT TRUE GENERATED TRUE)
    list(APPEND files ${dir}/${layer}.o ${dir}/${layer}.h)
  endforeach()
  string(REPLACE ";" "," layers "${ARG_LAYERS}")
  # NAME/ emptied first: a layer another call now compiles (a list split
  # in two) must not leave its old header here, where it would shadow the
  # new one.
  add_custom_command(
    OUTPUT ${files}
    COMMAND ${CMAKE_COMMAND} -E rm -rf ${dir}
    COMMAND $<TARGET_FILE:recurc> ${source} --target=cpu --layer=${layers}
            -o ${dir} ${defines} ${ARG_OPTIONS}
    DEPENDS recurc ${source}
    COMMENT "recurc ${spec} --layer=${layers} ${ARG_DEFINES}"
    VERBATIM)
  set(${name}_OBJECTS ${files} PARENT_SCOPE)
  set(${name}_DIR ${dir} PARENT_SCOPE)
endfunction()
