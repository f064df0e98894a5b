# weft — install rules and the CMake package (find_package(weft)).
#
# Installs libweft, the public headers (include/weft/**) and
#   <libdir>/cmake/weft/{weftConfig,weftConfigVersion,weftTargets*}.cmake
# so that a consumer can write
#   find_package(weft 0.1 REQUIRED)
#   target_link_libraries(app PRIVATE weft::weft)
#
# Included from the top-level CMakeLists.txt after the `weft` target exists.

option(WEFT_INSTALL "Generate the install rules for weft" ${PROJECT_IS_TOP_LEVEL})
if(NOT WEFT_INSTALL)
  return()
endif()

include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(WEFT_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/weft"
    CACHE STRING "Where weftConfig.cmake is installed, relative to the prefix")
mark_as_advanced(WEFT_INSTALL_CMAKEDIR)

# The exported target keeps the name `weft` and gets the namespace weft::, so
# consumers use the same weft::weft as projects that add_subdirectory(weft).
set_target_properties(weft PROPERTIES EXPORT_NAME weft)

install(TARGETS weft
  EXPORT weftTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  # Adds <prefix>/include to the exported INTERFACE_INCLUDE_DIRECTORIES. This
  # does not rely on the target's $<INSTALL_INTERFACE:...> entry, which is
  # written before GNUInstallDirs is included (and so is empty).
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/weft
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.hpp")

install(EXPORT weftTargets
  NAMESPACE weft::
  FILE weftTargets.cmake
  DESTINATION ${WEFT_INSTALL_CMAKEDIR})

install(FILES
  ${PROJECT_BINARY_DIR}/weftConfig.cmake
  ${PROJECT_BINARY_DIR}/weftConfigVersion.cmake
  DESTINATION ${WEFT_INSTALL_CMAKEDIR})

# Writes weftConfig.cmake and weftConfigVersion.cmake. Deferred to the end of
# the top-level CMakeLists.txt so that it sees every target_link_libraries()
# call on weft, wherever it is.
#
# Which dependencies the consumer must find: the INTERFACE ones always, and —
# for the static library — the PRIVATE ones too, which the exported target
# lists as $<LINK_ONLY:...> entries of INTERFACE_LINK_LIBRARIES: they must be
# resolvable imported targets when the consumer links. A shared libweft links
# its private dependencies itself.
function(_weft_write_package_config)
  get_target_property(type weft TYPE)
  get_target_property(private_libs weft LINK_LIBRARIES)
  get_target_property(interface_libs weft INTERFACE_LINK_LIBRARIES)
  if(NOT private_libs)
    set(private_libs "")
  endif()
  if(NOT interface_libs)
    set(interface_libs "")
  endif()
  set(needed ${interface_libs})
  if(type STREQUAL "STATIC_LIBRARY")
    list(APPEND needed ${private_libs})
  endif()

  set(WEFT_CONFIG_NEEDS_THREADS FALSE)
  set(WEFT_CONFIG_NEEDS_BOOST FALSE)
  set(WEFT_CONFIG_NEEDS_LIBURING FALSE)
  foreach(lib IN LISTS needed)
    string(REGEX REPLACE "^\\$<LINK_ONLY:(.*)>$" "\\1" lib "${lib}")
    if(lib STREQUAL "Threads::Threads")
      set(WEFT_CONFIG_NEEDS_THREADS TRUE)
    elseif(lib MATCHES "^Boost::")
      set(WEFT_CONFIG_NEEDS_BOOST TRUE)
    elseif(lib STREQUAL "PkgConfig::LIBURING")
      set(WEFT_CONFIG_NEEDS_LIBURING TRUE)
    elseif(TARGET "${lib}")
      get_target_property(imported "${lib}" IMPORTED)
      if(imported)
        message(WARNING "weft links the imported target ${lib}, which weftConfig.cmake "
                        "does not find for consumers: add it to cmake/weftConfig.cmake.in "
                        "and cmake/install.cmake.")
      endif()
    endif()
  endforeach()
  # The minimum Boost version the top-level find_package asks for.
  set(WEFT_BOOST_MIN_VERSION 1.71)

  configure_package_config_file(
    ${PROJECT_SOURCE_DIR}/cmake/weftConfig.cmake.in
    ${PROJECT_BINARY_DIR}/weftConfig.cmake
    INSTALL_DESTINATION ${WEFT_INSTALL_CMAKEDIR})

  # 0.x: a minor version bump may break the API, so only 0.1.* satisfies 0.1.
  write_basic_package_version_file(
    ${PROJECT_BINARY_DIR}/weftConfigVersion.cmake
    VERSION ${weft_VERSION}
    COMPATIBILITY SameMinorVersion)
endfunction()

cmake_language(DEFER DIRECTORY ${PROJECT_SOURCE_DIR} CALL _weft_write_package_config)
