# CheckExports.cmake - test: liblarder.so exports exactly the public API.
#
# Run as: cmake -DNM=<nm> -DLIBRARY=<liblarder.so> -DHEADER=<larder.h> -P CheckExports.cmake
#
# Fails when a LARDER_API function of larder.h is missing from the dynamic
# symbol table (forgotten definition, or hidden by -fvisibility=hidden), or
# when any other symbol of ours leaks out (a larder__ internal, or a helper
# that should have been static). Names starting with an underscore belong to
# the toolchain (_init, __bss_start, sanitizer hooks) and are ignored.
cmake_minimum_required(VERSION 3.25)

foreach(var NM LIBRARY HEADER)
	if(NOT ${var})
		message(FATAL_ERROR "CheckExports: -D${var}=... is required")
	endif()
endforeach()

file(READ "${HEADER}" header)
string(REGEX MATCHALL "LARDER_API[^;(]*[ *]larder_[a-z0-9_]+[ ]*\\(" decls "${header}")
set(api "")
foreach(decl IN LISTS decls)
	string(REGEX MATCH "larder_[a-z0-9_]+[ ]*\\($" name "${decl}")
	string(REGEX REPLACE "[ ]*\\($" "" name "${name}")
	list(APPEND api "${name}")
endforeach()
list(REMOVE_DUPLICATES api)
list(LENGTH api n_api)
if(n_api EQUAL 0)
	message(FATAL_ERROR "CheckExports: found no LARDER_API declarations in ${HEADER}")
endif()

execute_process(COMMAND "${NM}" -D --defined-only "${LIBRARY}"
	OUTPUT_VARIABLE nm_out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
	message(FATAL_ERROR "CheckExports: ${NM} failed on ${LIBRARY}")
endif()
string(REPLACE "\n" ";" lines "${nm_out}")
set(exported "")
foreach(line IN LISTS lines)
	if(line MATCHES "^[0-9a-fA-F]* *[A-Za-z] ([^ @]+)")
		set(sym "${CMAKE_MATCH_1}")
		if(NOT sym MATCHES "^_")
			list(APPEND exported "${sym}")
		endif()
	endif()
endforeach()

set(missing "")
foreach(sym IN LISTS api)
	if(NOT sym IN_LIST exported)
		list(APPEND missing "${sym}")
	endif()
endforeach()
set(extra "")
foreach(sym IN LISTS exported)
	if(NOT sym IN_LIST api)
		list(APPEND extra "${sym}")
	endif()
endforeach()

if(missing OR extra)
	message(FATAL_ERROR "CheckExports: ${LIBRARY} does not match ${HEADER}\n"
		"  declared LARDER_API but not exported: ${missing}\n"
		"  exported but not declared LARDER_API: ${extra}")
endif()
message(STATUS "CheckExports: ${n_api} public functions exported, nothing else")
