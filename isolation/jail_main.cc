// SPDX-License-Identifier: BSD-3-Clause
// jail_main: cellgate-jail — parse options and policy, then build and supervise one jail.
#include "isolation/jail_entry.h"
#include "isolation/jail_plan.h"

int main(int argc, char** argv) {
  // The jail's init blanks these strings in its copy (ChildPlan::title_area).
  cellgate::isolation::remember_helper_argv(argc, argv);
  return cellgate::isolation::jail_main(argc, argv);
}
