# One-way layering, checked at build time. A module's CMake target declares
# what it uses: the gpuscaler modules it links (directly or through other
# targets) and, in the property GPUSCALER_SEAMS, the seam headers (interfaces
# such as gpuscaler/cloud/provider.h) it uses without linking their module.
# The test and benchmark side is checked too: every executable and library
# defined under tests/ and bench/ (gpuscaler_test, the fuzz targets, the
# support library, the benchmarks) is an entry with its sources there, its
# include directories and the modules it reaches through its links.
#
# scripts/check_layering.py resolves every `#include "..."` to a file the way
# the compiler would (the including file's folder, the entry's include
# directories, then include/ and the source root) and attributes it to the
# module that owns the file (public header or private one alike). An include
# passes when that module is the entry's own or one it links, or when it
# names a declared seam (a test may also use the seams of the modules it
# links: it fakes them, as tests/fakes does the CloudProvider). A header
# under tests/ or bench/ passes for a test entry (and is checked as part of
# it) and fails for a module, since production code never includes test
# code. Anything else fails, including an include that resolves to no file
# or to a file no module owns: every header has an owner.
# gpuscaler/status.h and local headers named without a folder are always
# allowed. A failure stops the build before a single file compiles.

# gpuscaler_owns(TARGET FOLDERS... [FILES ...]): the folders (relative to the
# source root; the files directly in them) and single headers a module owns.
# A header named in FILES belongs to that module even inside another
# module's folder (sim/trace.h is gpuscaler_traces', not gpuscaler_sim's).
function(gpuscaler_owns target)
  cmake_parse_arguments(O "" "" "FOLDERS;FILES" ${ARGN})
  set_property(TARGET ${target} PROPERTY GPUSCALER_FOLDERS ${O_FOLDERS})
  set_property(TARGET ${target} PROPERTY GPUSCALER_FILES ${O_FILES})
  set_property(GLOBAL APPEND PROPERTY GPUSCALER_MODULES ${target})
endfunction()

# The gpuscaler modules `target` reaches through LINK_LIBRARIES, following
# every CMake target on the way (a test links a support library that links
# modules), into `out_links`; into `out_dirs`, the include directories under
# the source tree its files compile with: its own, then the interface ones
# of every target it reaches, in that order. A target that compiles modules'
# sources itself instead of linking them names those modules in its property
# GPUSCALER_COMPILES_MODULES, and counts as linking them.
function(_gpuscaler_reach target out_links out_dirs)
  get_property(modules GLOBAL PROPERTY GPUSCALER_MODULES)
  get_target_property(dirs ${target} INCLUDE_DIRECTORIES)
  if(NOT dirs)
    set(dirs "")
  endif()
  set(links "")
  set(seen ${target})
  set(todo ${target})
  while(todo)
    list(POP_FRONT todo t)
    get_target_property(compiled ${t} GPUSCALER_COMPILES_MODULES)
    if(compiled)
      list(APPEND links ${compiled})
    endif()
    get_target_property(deps ${t} LINK_LIBRARIES)
    if(NOT deps)
      set(deps "")
    endif()
    foreach(d IN LISTS deps)
      # Generator expressions and the ::@ scope markers CMake adds for a
      # target_link_libraries call from another folder are not targets.
      if(d MATCHES "^(\\$<|::@)" OR NOT TARGET ${d})
        continue()
      endif()
      get_target_property(aliased ${d} ALIASED_TARGET)
      if(aliased)
        set(d ${aliased})
      endif()
      if(d IN_LIST seen)
        continue()
      endif()
      list(APPEND seen ${d})
      list(APPEND todo ${d})
      if(d IN_LIST modules)
        list(APPEND links ${d})
      endif()
      get_target_property(interface_dirs ${d} INTERFACE_INCLUDE_DIRECTORIES)
      if(interface_dirs)
        list(APPEND dirs ${interface_dirs})
      endif()
    endforeach()
  endwhile()
  set(kept "")
  foreach(dir IN LISTS dirs)
    if(dir MATCHES "^\\$<")
      continue()
    endif()
    cmake_path(IS_PREFIX CMAKE_SOURCE_DIR "${dir}" NORMALIZE inside)
    if(inside)
      list(APPEND kept ${dir})
    endif()
  endforeach()
  list(REMOVE_DUPLICATES kept)
  list(REMOVE_DUPLICATES links)
  set(${out_links} ${links} PARENT_SCOPE)
  set(${out_dirs} ${kept} PARENT_SCOPE)
endfunction()

# The executables and libraries defined in `dir` and the folders below it.
function(_gpuscaler_targets_under dir out)
  get_property(found DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(sub IN LISTS subdirs)
    _gpuscaler_targets_under(${sub} more)
    list(APPEND found ${more})
  endforeach()
  set(kept "")
  foreach(t IN LISTS found)
    get_target_property(type ${t} TYPE)
    if(type MATCHES "^(EXECUTABLE|STATIC_LIBRARY|SHARED_LIBRARY|MODULE_LIBRARY|OBJECT_LIBRARY)$")
      list(APPEND kept ${t})
    endif()
  endforeach()
  set(${out} ${kept} PARENT_SCOPE)
endfunction()

# A JSON array of the strings in the list `values`.
function(_gpuscaler_json_array values out)
  set(quoted ${values})
  list(TRANSFORM quoted PREPEND "\"")
  list(TRANSFORM quoted APPEND "\"")
  list(JOIN quoted ", " joined)
  set(${out} "[${joined}]" PARENT_SCOPE)
endfunction()

# Writes the table and makes the check the first step of every module and
# of every test and benchmark target. Call it after the last add_subdirectory,
# so that every target and every link is known.
function(gpuscaler_check_layering)
  find_package(Python3 REQUIRED COMPONENTS Interpreter)
  get_property(modules GLOBAL PROPERTY GPUSCALER_MODULES)
  set(claimed "")
  foreach(m IN LISTS modules)
    get_target_property(extra ${m} GPUSCALER_FILES)
    if(extra)
      list(TRANSFORM extra PREPEND ${CMAKE_SOURCE_DIR}/)
      list(APPEND claimed ${extra})
    endif()
  endforeach()

  set(entries "")
  set(all_files "")
  foreach(m IN LISTS modules)
    get_target_property(folders ${m} GPUSCALER_FOLDERS)
    get_target_property(extra ${m} GPUSCALER_FILES)
    get_target_property(seams ${m} GPUSCALER_SEAMS)
    foreach(v IN ITEMS folders extra seams)
      if(NOT ${v})
        set(${v} "")
      endif()
    endforeach()
    set(files "")
    foreach(f IN LISTS folders)
      file(GLOB owned CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/${f}/*.h ${CMAKE_SOURCE_DIR}/${f}/*.cc)
      list(APPEND files ${owned})
    endforeach()
    if(claimed)
      list(REMOVE_ITEM files ${claimed})
    endif()
    list(TRANSFORM extra PREPEND ${CMAKE_SOURCE_DIR}/)
    list(APPEND files ${extra})
    list(APPEND all_files ${files})
    _gpuscaler_reach(${m} links dirs)
    _gpuscaler_json_array("${files}" files_json)
    _gpuscaler_json_array("${dirs}" dirs_json)
    _gpuscaler_json_array("${links}" links_json)
    _gpuscaler_json_array("${seams}" seams_json)
    string(CONCAT entry "\"${m}\": {\"kind\": \"module\", \"files\": ${files_json}, \"include_dirs\": ${dirs_json}, "
                        "\"links\": ${links_json}, \"seams\": ${seams_json}}")
    list(APPEND entries "${entry}")
  endforeach()

  # Test side: the sources under tests/ and bench/ (a test may compile a
  # module's file too; that file is checked as the module's). The check also
  # follows the test-side headers they include, so any header there re-runs it.
  set(test_targets "")
  file(GLOB_RECURSE headers CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/*.h ${CMAKE_SOURCE_DIR}/bench/*.h)
  list(APPEND all_files ${headers})
  _gpuscaler_targets_under(${CMAKE_SOURCE_DIR} targets)
  foreach(t IN LISTS targets)
    get_target_property(source_dir ${t} SOURCE_DIR)
    file(RELATIVE_PATH rel ${CMAKE_SOURCE_DIR} ${source_dir})
    if(t IN_LIST modules OR NOT rel MATCHES "^(tests|bench)(/|$)")
      continue()
    endif()
    get_target_property(sources ${t} SOURCES)
    set(files "")
    foreach(s IN LISTS sources)
      if(s MATCHES "^\\$<")
        continue()
      endif()
      cmake_path(ABSOLUTE_PATH s BASE_DIRECTORY ${source_dir} NORMALIZE OUTPUT_VARIABLE path)
      file(RELATIVE_PATH rel ${CMAKE_SOURCE_DIR} ${path})
      if(rel MATCHES "^(tests|bench)/")
        list(APPEND files ${path})
      endif()
    endforeach()
    list(APPEND all_files ${files})
    list(APPEND test_targets ${t})
    _gpuscaler_reach(${t} links dirs)
    _gpuscaler_json_array("${files}" files_json)
    _gpuscaler_json_array("${dirs}" dirs_json)
    _gpuscaler_json_array("${links}" links_json)
    string(CONCAT entry "\"${t}\": {\"kind\": \"test\", \"files\": ${files_json}, \"include_dirs\": ${dirs_json}, "
                        "\"links\": ${links_json}, \"seams\": []}")
    list(APPEND entries "${entry}")
  endforeach()

  list(JOIN entries ",\n" entries_json)
  set(json "{\"source_dir\": \"${CMAKE_SOURCE_DIR}\", \"entries\": {\n${entries_json}\n}}\n")
  set(table ${CMAKE_BINARY_DIR}/layering.json)
  file(WRITE ${table}.new "${json}")
  file(COPY_FILE ${table}.new ${table} ONLY_IF_DIFFERENT)
  list(REMOVE_DUPLICATES all_files)
  set(stamp ${CMAKE_BINARY_DIR}/layering.ok)
  add_custom_command(OUTPUT ${stamp}
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/scripts/check_layering.py ${table} ${stamp}
    DEPENDS ${table} ${all_files} ${CMAKE_SOURCE_DIR}/scripts/check_layering.py
    COMMENT "Checking that every module, test and benchmark includes only what it links")
  add_custom_target(gpuscaler_layering DEPENDS ${stamp})
  foreach(t IN LISTS modules test_targets)
    add_dependencies(${t} gpuscaler_layering)
  endforeach()
endfunction()
