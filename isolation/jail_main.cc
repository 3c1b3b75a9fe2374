// SPDX-License-Identifier: BSD-3-Clause
// jail_main: cellgate-jail — parse options and policy, then build and supervise one jail.
#include "isolation/jail_entry.h"

int main(int argc, char** argv) { return cellgate::isolation::jail_main(argc, argv); }
