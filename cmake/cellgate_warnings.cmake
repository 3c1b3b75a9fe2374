# One warning policy for every target of ours (as xeus does with a function).
function(cellgate_target_warnings target)
  target_compile_options(${target} PRIVATE
    -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wold-style-cast
    -Wimplicit-fallthrough -Wformat=2 -Werror
    # GCC 12 flags Asio 1.74's coroutine frame allocator (recycling operator new/delete pairs) as
    # mismatched: a known false positive (GCC PR 109224 family).
    -Wno-mismatched-new-delete)
endfunction()

# Hardening for executables.
function(cellgate_harden_executable target)
  target_link_options(${target} PRIVATE -pie -Wl,-z,relro,-z,now,-z,noexecstack)
endfunction()
