# Layer boundaries for headers.
#
# Every source spells its includes from the repository root ("cache/store.h"). Exporting
# the root itself would let any target include any folder's header, so instead each folder
# gets an include root of its own under the build tree that holds one symbolic link, to
# that folder only:
#
#   <build>/include/cache/cache  -> <source>/cache
#   <build>/include/watch/watch  -> <source>/watch      ...
#
# A library exports its own root (PUBLIC), so a target sees exactly the folders of the
# libraries it links: kcp_watch sees watch/ and cache/, kcp_cache sees cache/ only, and
# `#include "proxy/..."` in cache/ fails to compile. The check is tests/layering.

# kcp_layer_include_root(<folder> <out-var>): creates the include root of <folder>
# (a path relative to the source root) and stores its path in <out-var>.
function(kcp_layer_include_root folder out)
  string(REPLACE "/" "_" name "${folder}")
  set(root ${PROJECT_BINARY_DIR}/include/${name})
  get_filename_component(parent ${root}/${folder} DIRECTORY)
  file(MAKE_DIRECTORY ${parent})
  file(CREATE_LINK ${PROJECT_SOURCE_DIR}/${folder} ${root}/${folder} SYMBOLIC)
  set(${out} ${root} PARENT_SCOPE)
endfunction()

# kcp_layer(<target> <folder>): <target> exports the include root of <folder> (and links
# the libraries that give it the folders below it, as before).
function(kcp_layer target folder)
  kcp_layer_include_root(${folder} root)
  target_include_directories(${target} PUBLIC ${root})
  set_property(TARGET ${target} PROPERTY KCP_INCLUDE_ROOT ${root})
endfunction()
