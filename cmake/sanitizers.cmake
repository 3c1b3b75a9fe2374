# CELLGATE_SANITIZE="address;undefined" builds everything with those sanitizers.
if(CELLGATE_SANITIZE)
  string(REPLACE ";" "," _cellgate_san "${CELLGATE_SANITIZE}")
  add_compile_options(-fsanitize=${_cellgate_san} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${_cellgate_san})
endif()
