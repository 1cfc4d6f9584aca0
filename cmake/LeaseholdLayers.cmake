# The library's layers (docs/design.md, "Layers"): one folder under src/ and one OBJECT library
# per layer, each linking only the layers below it. A layer sees
#   - its own internal headers and those of the layers below (src/<layer>/ on its include path),
#   - the public headers that belong to it or to the layers below: a view of include/ made of
#     links in the build tree (layers/<layer>/leasehold/...), so that an include that runs back up
#     (the connection including with_lock.hpp, say) fails to compile.
#   - its Lua scripts (src/<layer>/scripts/*.lua, each opening with its contract), embedded at
#     build time in a generated <layer>_scripts.hpp (cmake/EmbedLua.cmake) as
#     leasehold::detail::lua::<file name>; each complete script is also written to
#     <build>/scripts/, to read or run alone (redis-cli --eval).
# leasehold_layer(NAME BELOW <layer>... HEADERS <public headers, relative to include/leasehold>
#                 SOURCES <sources> SCRIPTS <scripts, relative to src/<layer>/scripts>)

set(LEASEHOLD_LAYERS "")

function(leasehold_layer name)
  cmake_parse_arguments(PARSE_ARGV 1 layer "" "" "BELOW;HEADERS;SOURCES;SCRIPTS")
  set(target leasehold_${name})
  set(view ${PROJECT_BINARY_DIR}/layers/${name})
  file(REMOVE_RECURSE ${view})
  set(headers ${layer_HEADERS})
  foreach(below IN LISTS layer_BELOW)
    get_property(below_headers GLOBAL PROPERTY leasehold_layer_headers_${below})
    list(APPEND headers ${below_headers})
  endforeach()
  list(REMOVE_DUPLICATES headers)
  foreach(header IN LISTS headers)
    get_filename_component(dir ${view}/leasehold/${header} DIRECTORY)
    file(MAKE_DIRECTORY ${dir})
    file(CREATE_LINK ${PROJECT_SOURCE_DIR}/include/leasehold/${header}
         ${view}/leasehold/${header} SYMBOLIC)
  endforeach()
  set_property(GLOBAL PROPERTY leasehold_layer_headers_${name} ${headers})
  # The include path of the layer's sources: its view, and its own and the lower layers' folders.
  set(dirs ${view} ${PROJECT_SOURCE_DIR}/src/${name})
  foreach(below IN LISTS layer_BELOW)
    list(APPEND dirs ${PROJECT_SOURCE_DIR}/src/${below})
  endforeach()
  set_property(GLOBAL PROPERTY leasehold_layer_include_dirs_${name} ${dirs})
  set_property(GLOBAL APPEND PROPERTY leasehold_layer_owned_headers ${layer_HEADERS})

  add_library(${target} OBJECT ${layer_SOURCES})
  target_include_directories(${target} PUBLIC ${PROJECT_SOURCE_DIR}/src/${name})
  # The view, not include/: PRIVATE, so that a layer above sees its own, larger view.
  target_include_directories(${target} PRIVATE ${view})
  foreach(below IN LISTS layer_BELOW)
    target_link_libraries(${target} PUBLIC leasehold_${below})
  endforeach()
  target_link_libraries(${target} PUBLIC leasehold_layer_flags)
  set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  if(CMAKE_INTERPROCEDURAL_OPTIMIZATION)
    # Fat objects: a program that links the installed library without LTO uses their machine
    # code.
    target_compile_options(${target} PRIVATE -ffat-lto-objects)
  endif()
  if(layer_SCRIPTS)
    leasehold_embed_scripts(${name} ${layer_SCRIPTS})
  endif()
  set(LEASEHOLD_LAYERS ${LEASEHOLD_LAYERS} ${name} PARENT_SCOPE)
endfunction()

# The layer's <name>_scripts.hpp, generated from its scripts (and the fragments they include)
# whenever one of its .lua files changes.
function(leasehold_embed_scripts name)
  set(folder ${PROJECT_SOURCE_DIR}/src/${name}/scripts)
  set(generated ${PROJECT_BINARY_DIR}/generated/${name})
  set(header ${generated}/${name}_scripts.hpp)
  list(TRANSFORM ARGN PREPEND ${folder}/ OUTPUT_VARIABLE scripts)
  file(GLOB lua_files CONFIGURE_DEPENDS ${folder}/*.lua)
  add_custom_command(OUTPUT ${header}
    COMMAND ${CMAKE_COMMAND} "-DSCRIPTS=${scripts}" -DHEADER=${header}
            -DFULL_DIR=${PROJECT_BINARY_DIR}/scripts -P ${PROJECT_SOURCE_DIR}/cmake/EmbedLua.cmake
    DEPENDS ${lua_files} ${PROJECT_SOURCE_DIR}/cmake/EmbedLua.cmake
    COMMENT "Embedding the ${name} layer's Lua scripts"
    VERBATIM)
  target_sources(leasehold_${name} PRIVATE ${header})
  target_include_directories(leasehold_${name} PUBLIC ${generated})
endfunction()

# Every public header belongs to exactly one layer.
function(leasehold_check_layer_headers)
  get_property(owned GLOBAL PROPERTY leasehold_layer_owned_headers)
  file(GLOB_RECURSE all RELATIVE ${PROJECT_SOURCE_DIR}/include/leasehold CONFIGURE_DEPENDS
       ${PROJECT_SOURCE_DIR}/include/leasehold/*.hpp)
  foreach(header IN LISTS all)
    list(FIND owned ${header} index)
    if(index EQUAL -1)
      message(FATAL_ERROR "include/leasehold/${header} belongs to no layer: add it to a "
                          "leasehold_layer() in CMakeLists.txt")
    endif()
  endforeach()
  set(seen "")
  foreach(header IN LISTS owned)
    if(header IN_LIST seen)
      message(FATAL_ERROR "include/leasehold/${header} is given to two layers")
    endif()
    list(APPEND seen ${header})
  endforeach()
endfunction()
