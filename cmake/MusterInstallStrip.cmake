# muster_install_stripped(<target> <destination>): after the install rule of <target> into
# <destination> (relative to the prefix, or absolute), strips the installed file's debug info,
# so that `cmake --install` puts no debug info into the prefix: a program linked against the
# static library would otherwise carry all of it (hundreds of MB). -DMUSTER_INSTALL_DEBUG_INFO=ON
# installs the files as built. Symbols stay (backtraces keep function names).
option(MUSTER_INSTALL_DEBUG_INFO "cmake --install keeps the debug info of what it installs" OFF)

function(muster_install_stripped target destination)
  if(MUSTER_INSTALL_DEBUG_INFO OR NOT CMAKE_STRIP)
    return()
  endif()
  if(IS_ABSOLUTE "${destination}")
    set(path "\$ENV{DESTDIR}${destination}/$<TARGET_FILE_NAME:${target}>")
  else()
    set(path "\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${destination}/$<TARGET_FILE_NAME:${target}>")
  endif()
  install(CODE "
    execute_process(COMMAND \"${CMAKE_STRIP}\" --strip-debug \"${path}\" RESULT_VARIABLE result)
    if(NOT result EQUAL 0)
      message(FATAL_ERROR \"could not strip the debug info of ${path}\")
    endif()")
endfunction()
