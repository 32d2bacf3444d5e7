# install.cmake -- run by `cmake --install` (CMakeLists.txt includes it with
# install(SCRIPT)): the systemd unit with its paths made the installed
# ones, the sysusers.d and tmpfiles.d entries, the zsh completion, and a
# sample baton.yaml and jobs.yaml that are installed only where none exist,
# so that an upgrade never overwrites an operator's configuration.
#
# It runs at install time, so that `cmake --install --prefix DIR` and
# DESTDIR both give paths that match where the files land. The
# configuration directory follows GNUInstallDirs: /etc/baton for the prefix
# /usr, <prefix>/etc/baton otherwise (or CMAKE_INSTALL_SYSCONFDIR when it is
# absolute). The commands look for baton.yaml in the SYSCONFDIR the build
# was configured with, then in /etc/baton (config.h): the samples land in
# one of them for that prefix and for /usr. Set by CMakeLists.txt:
# BATON_SRC, BATON_BINDIR, BATON_SYSCONFDIR, and BATON_GEN, the build
# tree's directory for the files made here (never the current directory,
# which may be the source tree).
set(prefix "${CMAKE_INSTALL_PREFIX}")
if(IS_ABSOLUTE "${BATON_BINDIR}")
  set(bindir "${BATON_BINDIR}")
else()
  set(bindir "${prefix}/${BATON_BINDIR}")
endif()
if(IS_ABSOLUTE "${BATON_SYSCONFDIR}")
  set(etc "${BATON_SYSCONFDIR}")
elseif(prefix STREQUAL "/usr")
  set(etc "/etc")
else()
  set(etc "${prefix}/${BATON_SYSCONFDIR}")
endif()
set(gen "${BATON_GEN}")
file(MAKE_DIRECTORY "${gen}")

file(READ "${BATON_SRC}/deploy/baton.service" text)
string(REPLACE "/usr/local/bin/baton" "${bindir}/baton" text "${text}")
string(REPLACE "/etc/baton/" "${etc}/baton/" text "${text}")
file(WRITE "${gen}/baton.service" "${text}")
file(READ "${BATON_SRC}/deploy/systemd/baton.tmpfiles" text)
string(REPLACE "/etc/baton" "${etc}/baton" text "${text}")
file(WRITE "${gen}/tmpfiles.conf" "${text}")

# systemd reads <prefix>/lib/... for /usr and /usr/local (not the
# multiarch libdir).
file(INSTALL DESTINATION "${prefix}/lib/systemd/system" TYPE FILE FILES "${gen}/baton.service")
file(INSTALL DESTINATION "${prefix}/lib/sysusers.d" TYPE FILE
     FILES "${BATON_SRC}/deploy/systemd/baton.sysusers" RENAME baton.conf)
file(INSTALL DESTINATION "${prefix}/lib/tmpfiles.d" TYPE FILE FILES "${gen}/tmpfiles.conf"
     RENAME baton.conf)
# zsh reads the completions of packages in /usr/share/zsh/vendor-completions
# (Debian's fpath), and zsh's own site-functions under other prefixes
# (/usr/local/share/zsh/site-functions is on Debian's fpath too).
if(prefix STREQUAL "/usr")
  set(zsh_dir "${prefix}/share/zsh/vendor-completions")
else()
  set(zsh_dir "${prefix}/share/zsh/site-functions")
endif()
file(INSTALL DESTINATION "${zsh_dir}" TYPE FILE FILES "${BATON_SRC}/deploy/completion/_baton")
foreach(pair "config/baton.yaml:baton.yaml" "deploy/jobs.yaml:jobs.yaml")
  string(REPLACE ":" ";" pair "${pair}")
  list(GET pair 0 src)
  list(GET pair 1 name)
  if(EXISTS "$ENV{DESTDIR}${etc}/baton/${name}")
    message(STATUS "Keeping: $ENV{DESTDIR}${etc}/baton/${name}")
  else()
    file(INSTALL DESTINATION "${etc}/baton" TYPE FILE FILES "${BATON_SRC}/${src}"
         PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ)
  endif()
endforeach()
