# Runs layerbench-attn under mpirun and expects exit code 2 (every rank: the harness agrees on a
# usage error before any collective) and the reason on stderr.
#   -DMPIEXEC=... -DBIN=... -DNP=<ranks> -DARGS="<flags, space separated>" -DREGEX=<reason>
# Without ARGS: the 3-rank world-size case.
if(NOT NP)
  set(NP 3)
endif()
if(NOT DEFINED ARGS)
  set(ARGS "--backend host --heads 14 --head-dim 16 --seqs 64 --topologies usp2+cp2")
  set(REGEX "needs U\\*R\\*A")
endif()
separate_arguments(arg_list UNIX_COMMAND "${ARGS}")
execute_process(
  COMMAND ${MPIEXEC} -np ${NP} --oversubscribe ${BIN} ${arg_list}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 50)
message(STATUS "exit ${rc}\n${err}")
if(NOT rc EQUAL 2)
  message(FATAL_ERROR "expected exit code 2, got '${rc}'")
endif()
if(NOT err MATCHES "${REGEX}")
  message(FATAL_ERROR "the reason '${REGEX}' is missing")
endif()
