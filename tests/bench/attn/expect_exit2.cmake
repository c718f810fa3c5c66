# Runs layerbench-attn at 3 ranks with a 4-rank topology and expects exit code 2 and the
# world-size message.
execute_process(
  COMMAND ${MPIEXEC} -np 3 --oversubscribe ${BIN} --backend host --heads 14 --head-dim 16
          --seqs 64 --topologies usp2+cp2
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 50)
message(STATUS "exit ${rc}\n${err}")
if(NOT rc EQUAL 2)
  message(FATAL_ERROR "expected exit code 2, got '${rc}'")
endif()
if(NOT err MATCHES "needs U\\*A")
  message(FATAL_ERROR "the world-size message is missing")
endif()
