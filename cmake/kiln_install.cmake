# Install rules and the CMake package (kilnConfig.cmake) of kiln's C++ API. Included by the top
# CMakeLists.txt after the libraries are defined; docs/API.md says how an application uses it.
include(CMakePackageConfigHelpers)

set(_kiln_layers kiln_ir kiln_reference kiln_onnx_proto kiln_frontend kiln_passes kiln_runtime
                 kiln_target kiln_codegen kiln_driver)
# Exported as kiln::ir, kiln::runtime, ...: the layer's name without the prefix.
foreach(_layer ${_kiln_layers})
  string(REGEX REPLACE "^kiln_" "" _name ${_layer})
  set_target_properties(${_layer} PROPERTIES EXPORT_NAME ${_name})
endforeach()

# kiln::kiln: the whole API (kiln/kiln.h: compile, load, run, dump IR, the CPU reference).
add_library(kiln_api INTERFACE)
target_link_libraries(kiln_api INTERFACE kiln_driver)
set_target_properties(kiln_api PROPERTIES EXPORT_NAME kiln)

install(TARGETS ${_kiln_layers} kiln_api EXPORT kilnTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/kiln)
install(TARGETS kiln RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
foreach(_dir ir ir/ops reference frontend frontend/converters passes runtime target codegen kiln)
  file(GLOB _headers ${CMAKE_SOURCE_DIR}/${_dir}/*.h)
  install(FILES ${_headers} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/kiln/${_dir})
endforeach()

set(_kiln_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/kiln)
install(EXPORT kilnTargets NAMESPACE kiln:: DESTINATION ${_kiln_cmake_dir})
configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/kilnConfig.cmake.in
                              ${CMAKE_BINARY_DIR}/kilnConfig.cmake
                              INSTALL_DESTINATION ${_kiln_cmake_dir})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/kilnConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/kilnConfig.cmake ${CMAKE_BINARY_DIR}/kilnConfigVersion.cmake
        DESTINATION ${_kiln_cmake_dir})
