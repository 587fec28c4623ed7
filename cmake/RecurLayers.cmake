#===- cmake/RecurLayers.cmake - layers compiled by recurc at build time ---===#
#
# recur_compile_layers(NAME SPEC LAYERS <layer>... [DEFINES <NAME=VALUE>...]
#                      [OPTIONS <recurc option>...])
# compiles every listed layer of SPEC (a path relative to the calling
# directory) for the CPU into ${CMAKE_CURRENT_BINARY_DIR}/NAME (NAME/<layer>.o
# and NAME/<layer>.h), and sets NAME_OBJECTS (objects and headers, for
# add_executable) and NAME_DIR (for target_include_directories) in the
# caller's scope. Used by the training programs and the benchmarks.
#
#===-----------------------------------------------------------------------===#

function(recur_compile_layers name spec)
  cmake_parse_arguments(ARG "" "" "LAYERS;DEFINES;OPTIONS" ${ARGN})
  set(dir ${CMAKE_CURRENT_BINARY_DIR}/${name})
  set(objects)
  set(headers)
  foreach(layer IN LISTS ARG_LAYERS)
    list(APPEND objects ${dir}/${layer}.o)
    list(APPEND headers ${dir}/${layer}.h)
  endforeach()
  set(defines)
  foreach(define IN LISTS ARG_DEFINES)
    list(APPEND defines -D ${define})
  endforeach()
  get_filename_component(source ${spec} ABSOLUTE)
  add_custom_command(
    OUTPUT ${objects} ${headers}
    COMMAND $<TARGET_FILE:recurc> ${source} --target=cpu -o ${dir} ${defines}
            ${ARG_OPTIONS}
    DEPENDS recurc ${source}
    COMMENT "recurc ${spec} ${ARG_DEFINES}"
    VERBATIM)
  set_source_files_properties(${objects} PROPERTIES EXTERNAL_OBJECT TRUE
                                                    GENERATED TRUE)
  set(${name}_OBJECTS ${objects} ${headers} PARENT_SCOPE)
  set(${name}_DIR ${dir} PARENT_SCOPE)
endfunction()
