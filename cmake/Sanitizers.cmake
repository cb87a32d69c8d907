# Host-code sanitizer build: -DMOEBENCH_SANITIZE=address,undefined (any -fsanitize= list the
# C++ compiler takes). Applies to every C++ file and to the host half of every .cu file (passed
# to nvcc's host compiler with -Xcompiler; device code is checked by compute-sanitizer instead,
# see scripts/compute-sanitizer.sh). Runtime options: scripts/check-sanitizers.sh and
# docs/sanitizers.md.
set(MOEBENCH_SANITIZE "" CACHE STRING
    "Sanitizers for host code, e.g. address,undefined (empty: none)")

if(MOEBENCH_SANITIZE)
  # Every finding is fatal (UBSan otherwise prints and carries on, and the test still passes);
  # frame pointers keep the reports' stacks readable.
  set(_moebench_san_flags -fsanitize=${MOEBENCH_SANITIZE} -fno-sanitize-recover=all
      -fno-omit-frame-pointer)
  # nvcc splits -Xcompiler arguments at commas, so each flag (and each sanitizer) goes alone.
  string(REPLACE "," ";" _moebench_san_list "${MOEBENCH_SANITIZE}")
  set(_moebench_san_cuda_flags -Xcompiler=-fno-sanitize-recover=all
      -Xcompiler=-fno-omit-frame-pointer)
  foreach(s IN LISTS _moebench_san_list)
    list(APPEND _moebench_san_cuda_flags -Xcompiler=-fsanitize=${s})
  endforeach()
  add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:${_moebench_san_flags}>"
                      "$<$<COMPILE_LANGUAGE:CUDA>:${_moebench_san_cuda_flags}>")
  # Executables are linked by the host C++ compiler (also when CUDA is the link language).
  add_link_options(${_moebench_san_flags})
  message(STATUS "moebench: host code built with -fsanitize=${MOEBENCH_SANITIZE}")
endif()
