# Bakes the git commit, dirty flag and build configuration into the binary. The git part is
# re-read on every build (not only at configure), so a report never names a stale commit.
set(MOEBENCH_BUILD_INFO_CPP ${CMAKE_BINARY_DIR}/generated/build_info.cpp)
add_custom_target(moebench_build_info_gen
  COMMAND ${CMAKE_COMMAND}
          -DSOURCE_DIR=${CMAKE_SOURCE_DIR}
          -DOUTPUT=${MOEBENCH_BUILD_INFO_CPP}
          -DVERSION=${PROJECT_VERSION}
          -DBUILD_TYPE=${CMAKE_BUILD_TYPE}
          "-DCUDA_ARCHS=${CMAKE_CUDA_ARCHITECTURES}"
          "-DCXX_COMPILER=${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER_VERSION}"
          "-DCUDA_COMPILER=${CMAKE_CUDA_COMPILER_ID} ${CMAKE_CUDA_COMPILER_VERSION}"
          -P ${CMAKE_SOURCE_DIR}/cmake/WriteBuildInfo.cmake
  BYPRODUCTS ${MOEBENCH_BUILD_INFO_CPP}
  COMMENT "Reading git commit for the build info"
  VERBATIM)
