// SPDX-License-Identifier: BSD-3-Clause
// bpf_probe: tries bpf(BPF_MAP_CREATE) and bpf(BPF_PROG_LOAD) of a trivial socket filter.
#include <linux/bpf.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "probe.h"

int main(void) {
  union bpf_attr attr;
  memset(&attr, 0, sizeof attr);
  attr.map_type = BPF_MAP_TYPE_ARRAY;
  attr.key_size = 4;
  attr.value_size = 4;
  attr.max_entries = 1;
  long fd = syscall(SYS_bpf, BPF_MAP_CREATE, &attr, sizeof attr);
  probe_attempt("bpf(BPF_MAP_CREATE)", fd);
  if (fd >= 0) close((int)fd);

  struct bpf_insn prog[] = {
      {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0},
      {.code = BPF_JMP | BPF_EXIT},
  };
  memset(&attr, 0, sizeof attr);
  attr.prog_type = BPF_PROG_TYPE_SOCKET_FILTER;
  attr.insns = (unsigned long)prog;
  attr.insn_cnt = 2;
  attr.license = (unsigned long)"GPL";
  fd = syscall(SYS_bpf, BPF_PROG_LOAD, &attr, sizeof attr);
  probe_attempt("bpf(BPF_PROG_LOAD socket filter)", fd);
  if (fd >= 0) close((int)fd);
  return probe_verdict();
}
