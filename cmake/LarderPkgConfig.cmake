# LarderPkgConfig.cmake - installs larder.pc.
#
# The file is written at install time, not at configure time, so that
# `cmake --install build --prefix /somewhere` produces a larder.pc that points
# at /somewhere (CMAKE_INSTALL_PREFIX inside an install script is the prefix
# actually used). DESTDIR is not part of it, as packagers expect. libdir and
# includedir follow GNUInstallDirs: relative ones hang off ${prefix},
# absolute ones are kept as given.
include_guard(GLOBAL)

foreach(kind LIBDIR INCLUDEDIR)
	if(IS_ABSOLUTE "${CMAKE_INSTALL_${kind}}")
		set(larder_pc_${kind} "${CMAKE_INSTALL_${kind}}")
	else()
		set(larder_pc_${kind} "\${prefix}/${CMAKE_INSTALL_${kind}}")
	endif()
endforeach()

set(larder_pc_out "${PROJECT_BINARY_DIR}/larder.pc")
install(CODE "
	set(LARDER_PC_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
	set(LARDER_PC_LIBDIR [[${larder_pc_LIBDIR}]])
	set(LARDER_PC_INCLUDEDIR [[${larder_pc_INCLUDEDIR}]])
	set(PROJECT_VERSION [[${PROJECT_VERSION}]])
	set(PROJECT_DESCRIPTION [[${PROJECT_DESCRIPTION}]])
	configure_file([[${PROJECT_SOURCE_DIR}/cmake/larder.pc.in]] [[${larder_pc_out}]] @ONLY)
")
install(FILES "${larder_pc_out}" DESTINATION "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
