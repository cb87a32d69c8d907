# Chooses CMAKE_CUDA_ARCHITECTURES before the CUDA language is enabled.
#
#  1. An explicit -DCMAKE_CUDA_ARCHITECTURES=... always wins.
#  2. -DMOEBENCH_ALL_ARCHS=ON forces the full list below (a binary to ship).
#  3. Otherwise the GPU present at configure time (a quick build for a hardware owner).
#  4. With no GPU, the full list: every architecture CUDA 13 builds, sm_75 to sm_120, with
#     90a (Hopper-only instructions) and PTX of the newest so future GPUs JIT it.
option(MOEBENCH_ALL_ARCHS "Build for every architecture CUDA 13 supports" OFF)
set(MOEBENCH_FULL_ARCHS "75-real;80-real;86-real;89-real;90a-real;100-real;120")

if(DEFINED CMAKE_CUDA_ARCHITECTURES AND NOT CMAKE_CUDA_ARCHITECTURES STREQUAL "")
  set(MOEBENCH_CUDA_ARCH_REASON "given explicitly")
elseif(MOEBENCH_ALL_ARCHS)
  set(CMAKE_CUDA_ARCHITECTURES "${MOEBENCH_FULL_ARCHS}" CACHE STRING "CUDA architectures")
  set(MOEBENCH_CUDA_ARCH_REASON "MOEBENCH_ALL_ARCHS=ON")
else()
  set(_cc "")
  find_program(_nvidia_smi nvidia-smi)
  if(_nvidia_smi)
    execute_process(COMMAND ${_nvidia_smi} --query-gpu=compute_cap --format=csv,noheader
                    OUTPUT_VARIABLE _cc RESULT_VARIABLE _rc ERROR_QUIET
                    OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(NOT _rc EQUAL 0)
      set(_cc "")
    endif()
  endif()
  string(REGEX MATCH "^([0-9]+)\\.([0-9]+)" _m "${_cc}")
  if(_m)
    set(_arch "${CMAKE_MATCH_1}${CMAKE_MATCH_2}")
    if(_arch STREQUAL "90")
      set(_arch "90a")  # Hopper: enable its own instructions
    endif()
    set(CMAKE_CUDA_ARCHITECTURES "${_arch}" CACHE STRING "CUDA architectures")
    set(MOEBENCH_CUDA_ARCH_REASON "GPU present at configure time (compute ${_cc})")
  else()
    set(CMAKE_CUDA_ARCHITECTURES "${MOEBENCH_FULL_ARCHS}" CACHE STRING "CUDA architectures")
    set(MOEBENCH_CUDA_ARCH_REASON "no GPU at configure time: full list")
  endif()
endif()
