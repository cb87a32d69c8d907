# NCCL for the expert-parallel probes: only its header is needed at build time. libnccl.so.2 is
# loaded at run time (engine/ep/nccl/nccl_library.cpp), so the binary starts without it.
# MOEBENCH_NCCL: AUTO (use nccl.h when found), ON (require it), OFF (build without EP probes).
set(MOEBENCH_NCCL AUTO CACHE STRING "Build the expert-parallel probes on NCCL: AUTO, ON or OFF")
set_property(CACHE MOEBENCH_NCCL PROPERTY STRINGS AUTO ON OFF)

set(MOEBENCH_HAVE_NCCL OFF)
set(MOEBENCH_NCCL_MISSING_REASON "")
if(MOEBENCH_NCCL STREQUAL "OFF")
  set(MOEBENCH_NCCL_MISSING_REASON "built with MOEBENCH_NCCL=OFF")
else()
  find_path(MOEBENCH_NCCL_INCLUDE_DIR nccl.h
    HINTS ${NCCL_ROOT} $ENV{NCCL_ROOT} ${CUDAToolkit_INCLUDE_DIRS}
    PATH_SUFFIXES include)
  if(MOEBENCH_NCCL_INCLUDE_DIR)
    file(STRINGS ${MOEBENCH_NCCL_INCLUDE_DIR}/nccl.h _nccl_major REGEX "^#define NCCL_MAJOR ")
    file(STRINGS ${MOEBENCH_NCCL_INCLUDE_DIR}/nccl.h _nccl_minor REGEX "^#define NCCL_MINOR ")
    string(REGEX REPLACE "[^0-9]" "" _nccl_major "${_nccl_major}")
    string(REGEX REPLACE "[^0-9]" "" _nccl_minor "${_nccl_minor}")
    # ncclCommInitRankConfig with a non-blocking config (the watchdog polls it) needs 2.14.
    if(_nccl_major GREATER 2 OR (_nccl_major EQUAL 2 AND _nccl_minor GREATER_EQUAL 14))
      set(MOEBENCH_HAVE_NCCL ON)
      message(STATUS "moebench: NCCL ${_nccl_major}.${_nccl_minor} headers in ${MOEBENCH_NCCL_INCLUDE_DIR}")
    else()
      set(MOEBENCH_NCCL_MISSING_REASON
          "nccl.h in ${MOEBENCH_NCCL_INCLUDE_DIR} is NCCL ${_nccl_major}.${_nccl_minor}, older than the 2.14 needed")
    endif()
  else()
    set(MOEBENCH_NCCL_MISSING_REASON
        "nccl.h was not found in the CUDA toolkit or under NCCL_ROOT at build time")
  endif()
  if(MOEBENCH_NCCL STREQUAL "ON" AND NOT MOEBENCH_HAVE_NCCL)
    message(FATAL_ERROR "MOEBENCH_NCCL=ON: ${MOEBENCH_NCCL_MISSING_REASON}")
  endif()
endif()
if(NOT MOEBENCH_HAVE_NCCL)
  message(STATUS "moebench: expert-parallel probes not built: ${MOEBENCH_NCCL_MISSING_REASON}")
endif()

# The LSA exchange (engine/ep/nccl/lsa_exchange.*) is written against NCCL's device API:
# symmetric windows, LSA pointers and barriers, which nccl_device.h declares from NCCL 2.28.
# Without it the other exchanges build as before and `moebench list` says why it did not.
# (The reasons become compile definitions: no semicolons, which CMake would split them at.)
set(MOEBENCH_HAVE_NCCL_DEVICE_API OFF)
set(MOEBENCH_NCCL_DEVICE_API_MISSING_REASON "")
if(NOT MOEBENCH_HAVE_NCCL)
  set(MOEBENCH_NCCL_DEVICE_API_MISSING_REASON "${MOEBENCH_NCCL_MISSING_REASON}")
elseif(NOT (_nccl_major GREATER 2 OR (_nccl_major EQUAL 2 AND _nccl_minor GREATER_EQUAL 28)))
  set(MOEBENCH_NCCL_DEVICE_API_MISSING_REASON
      "nccl.h in ${MOEBENCH_NCCL_INCLUDE_DIR} is NCCL ${_nccl_major}.${_nccl_minor}, older than the 2.28 of the device API")
elseif(NOT EXISTS ${MOEBENCH_NCCL_INCLUDE_DIR}/nccl_device.h)
  set(MOEBENCH_NCCL_DEVICE_API_MISSING_REASON
      "NCCL ${_nccl_major}.${_nccl_minor} in ${MOEBENCH_NCCL_INCLUDE_DIR} has no nccl_device.h")
else()
  set(MOEBENCH_HAVE_NCCL_DEVICE_API ON)
  message(STATUS "moebench: NCCL device API found: the lsa exchange is built")
endif()
if(NOT MOEBENCH_HAVE_NCCL_DEVICE_API)
  message(STATUS "moebench: exchange lsa not built: ${MOEBENCH_NCCL_DEVICE_API_MISSING_REASON}")
endif()
