# LarderWarnings.cmake - the compile baseline of every larder target.
#
# larder_warnings is an INTERFACE target: linking it (PRIVATE) gives a target
# the warning set below, -Werror when LARDER_WERROR is on, and _DEFAULT_SOURCE
# (ISO C11 stays the language; glibc exposes the POSIX and Linux calls the
# engine and its tools use: mmap flags, clock_gettime, syscall).
#
# The set must compile clean with gcc 12 and clang 14. Flags that either
# compiler lacks, or that differ in meaning between them (for instance
# -Wimplicit-fallthrough: gcc accepts a comment, clang only the attribute),
# are left out on purpose.
#
# larder_enforce_warnings() runs after all sub-projects are added and links
# larder_warnings into any compiled project target that does not reach it
# through its link libraries (larder_internal, for one, carries it); a target
# holding third-party code may opt out with
# set_property(TARGET t PROPERTY LARDER_NO_WARNINGS ON).
include_guard(GLOBAL)

add_library(larder_warnings INTERFACE)
target_compile_definitions(larder_warnings INTERFACE _DEFAULT_SOURCE)
target_compile_options(larder_warnings INTERFACE
	-Wall
	-Wextra
	-Wshadow
	-Wpointer-arith
	-Wundef
	-Wvla
	-Wformat-security
	$<$<COMPILE_LANGUAGE:C>:-Wstrict-prototypes>
	$<$<COMPILE_LANGUAGE:C>:-Wmissing-prototypes>
	$<$<COMPILE_LANGUAGE:C>:-Wold-style-definition>
	$<$<BOOL:${LARDER_WERROR}>:-Werror>)

define_property(TARGET PROPERTY LARDER_NO_WARNINGS
	BRIEF_DOCS "Do not add larder_warnings to this target"
	FULL_DOCS "Set on targets that compile third-party code.")

# Sets ${out} to TRUE when target ${t} reaches larder_warnings through its
# link libraries (directly or through INTERFACE/PUBLIC usage requirements).
function(larder_links_warnings t out)
	set(seen "")
	set(queue ${t})
	while(queue)
		list(POP_FRONT queue cur)
		if(cur STREQUAL "larder_warnings")
			set(${out} TRUE PARENT_SCOPE)
			return()
		endif()
		if(cur IN_LIST seen OR NOT TARGET ${cur})
			continue()
		endif()
		list(APPEND seen ${cur})
		get_target_property(type ${cur} TYPE)
		set(props INTERFACE_LINK_LIBRARIES)
		if(cur STREQUAL t AND NOT type STREQUAL "INTERFACE_LIBRARY")
			set(props LINK_LIBRARIES)
		endif()
		foreach(prop IN LISTS props)
			get_target_property(links ${cur} ${prop})
			foreach(link IN LISTS links)
				# $<LINK_ONLY:x> carries no compile options; skip it.
				if(link AND NOT link MATCHES "^\\$<")
					list(APPEND queue ${link})
				endif()
			endforeach()
		endforeach()
	endwhile()
	set(${out} FALSE PARENT_SCOPE)
endfunction()

function(larder_enforce_warnings dir)
	get_property(targets DIRECTORY "${dir}" PROPERTY BUILDSYSTEM_TARGETS)
	foreach(t IN LISTS targets)
		get_target_property(type ${t} TYPE)
		if(type STREQUAL "INTERFACE_LIBRARY" OR type STREQUAL "UTILITY")
			continue()
		endif()
		get_target_property(optout ${t} LARDER_NO_WARNINGS)
		larder_links_warnings(${t} linked)
		if(optout OR linked)
			continue()
		endif()
		message(STATUS "larder: ${t} does not link larder_warnings; adding it")
		set_property(TARGET ${t} APPEND PROPERTY LINK_LIBRARIES larder_warnings)
	endforeach()
	get_property(subdirs DIRECTORY "${dir}" PROPERTY SUBDIRECTORIES)
	foreach(sub IN LISTS subdirs)
		larder_enforce_warnings("${sub}")
	endforeach()
endfunction()
