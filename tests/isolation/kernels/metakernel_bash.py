# SPDX-License-Identifier: BSD-3-Clause
# metakernel_bash: a bash kernel, metakernel's own BashKernel (python3-metakernel ships the class; Debian
# packages no bash kernel). Run with `python3 metakernel_bash.py -f CONNECTION_FILE`.
from metakernel.process_metakernel import BashKernel

if __name__ == "__main__":
    BashKernel.run_as_main()
