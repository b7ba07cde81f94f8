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
# larder_warnings into any compiled project target that does not link it (or
# larder_internal, which carries it) itself; a target holding third-party
# code may opt out with set_property(TARGET t PROPERTY LARDER_NO_WARNINGS ON).
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

function(larder_enforce_warnings dir)
	get_property(targets DIRECTORY "${dir}" PROPERTY BUILDSYSTEM_TARGETS)
	foreach(t IN LISTS targets)
		get_target_property(type ${t} TYPE)
		if(type STREQUAL "INTERFACE_LIBRARY" OR type STREQUAL "UTILITY")
			continue()
		endif()
		get_target_property(optout ${t} LARDER_NO_WARNINGS)
		get_target_property(links ${t} LINK_LIBRARIES)
		if(optout OR "larder_warnings" IN_LIST links OR "larder_internal" IN_LIST links)
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
