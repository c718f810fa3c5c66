# cmake -DHELP2MAN=... -DBINARY=... -DNAME=... -DDESCRIPTION=... -DOUTPUT=... -P LayerbenchMan.cmake
# One man page from a binary's --help and --version. For a binary with subcommands
# (layerbench-ab) the help of each subcommand is added as a section.
set(ENV{OMPI_ALLOW_RUN_AS_ROOT} 1)
set(ENV{OMPI_ALLOW_RUN_AS_ROOT_CONFIRM} 1)
set(ENV{LAYERBENCH_PROGRESS} off)
# The help texts are UTF-8; a man page spells its symbols as roff escapes, so that every locale
# shows them (a raw "±" prints as "??" under man in the C locale).
macro(lb_roff_symbols var)
  foreach(_pair "±;\\(+-" "—;\\(em" "–;\\(en" "×;\\(mu" "≥;\\(>=" "≤;\\(<=" "−;\\-" "→;\\(->" "µ;\\(mc" "…;...")
    list(GET _pair 0 _from)
    list(GET _pair 1 _to)
    string(REPLACE "${_from}" "${_to}" ${var} "${${var}}")
  endforeach()
endmacro()
set(_include "${OUTPUT}.include")
set(_include_arg)
if(NAME STREQUAL "layerbench-ab")
  set(_include_arg "--include=${_include}")
  file(WRITE "${_include}" "")
  file(APPEND "${_include}" "[SUBCOMMANDS]\n")
  foreach(_sub analyze plan run)
    execute_process(COMMAND "${BINARY}" ${_sub} --help OUTPUT_VARIABLE _help RESULT_VARIABLE _rc)
    if(NOT _rc EQUAL 0)
      message(FATAL_ERROR "${NAME} ${_sub} --help failed (${_rc})")
    endif()
    string(REPLACE "\\" "\\\\" _help "${_help}")
    # Escaped before help2man reads the include: it re-encodes an include's UTF-8 as "??" in some locales.
    lb_roff_symbols(_help)
    file(APPEND "${_include}" ".SS ${_sub}\n.nf\n${_help}\n.fi\n")
  endforeach()
endif()
execute_process(COMMAND "${HELP2MAN}" --no-info --no-discard-stderr "--name=${DESCRIPTION}"
                        ${_include_arg} --output=${OUTPUT} "${BINARY}"
                RESULT_VARIABLE _rc ERROR_VARIABLE _err)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "help2man ${NAME} failed (${_rc}): ${_err}")
endif()
file(READ "${OUTPUT}" _page)
lb_roff_symbols(_page)
file(WRITE "${OUTPUT}" "${_page}")
