# LarderFlavour.cmake - build flavours that must cover every object file.
#
# A sanitizer is a property of the whole process: TSan reports false races
# when part of the code is not instrumented, and ASan needs its runtime linked
# into every executable. So LARDER_SANITIZE is applied as directory-scoped
# compile and link options, set here before any target is created, and thereby
# reaches every target of the project, sub-projects included.
#
#   none        nothing added
#   asan-ubsan  AddressSanitizer (with LeakSanitizer) + UndefinedBehaviorSanitizer;
#               any UB report is fatal (-fno-sanitize-recover=all)
#   tsan        ThreadSanitizer
#
# A sanitizer build also defines LARDER_SANITIZE_BUILD=1, one macro that
# gcc and clang code can test alike (tests use it to shorten long runs).
#
# LARDER_ASSERTS keeps assert() on in optimised builds: the test presets build
# RelWithDebInfo (fast enough for stress tests) but a test or an invariant
# check compiled out by NDEBUG could not fail. -UNDEBUG follows the
# configuration's -DNDEBUG on the command line, so it wins. It also defines
# LARDER_ASSERTS, which turns on the engine's own LARDER__ASSERT
# (src/core/assert.h: invariant checks, compiled out otherwise).
include_guard(GLOBAL)

if(LARDER_SANITIZE STREQUAL "none" OR LARDER_SANITIZE STREQUAL "")
	set(larder_san_flags "")
elseif(LARDER_SANITIZE STREQUAL "asan-ubsan")
	set(larder_san_flags -fsanitize=address,undefined -fno-omit-frame-pointer
		-fno-sanitize-recover=all)
elseif(LARDER_SANITIZE STREQUAL "tsan")
	set(larder_san_flags -fsanitize=thread -fno-omit-frame-pointer)
else()
	message(FATAL_ERROR "LARDER_SANITIZE must be none, asan-ubsan or tsan, not '${LARDER_SANITIZE}'")
endif()

if(larder_san_flags)
	add_compile_options(${larder_san_flags})
	add_link_options(${larder_san_flags})
	add_compile_definitions(LARDER_SANITIZE_BUILD=1)
	message(STATUS "larder: sanitizer flavour ${LARDER_SANITIZE}: ${larder_san_flags}")
endif()

if(LARDER_ASSERTS)
	add_compile_options(-UNDEBUG)
	add_compile_definitions(LARDER_ASSERTS=1)
endif()
