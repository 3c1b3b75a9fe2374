# SPDX-License-Identifier: BSD-3-Clause
# plant_status: the launcher keeps cellgate-jail's status file in the kernel's own (bind-same) ipc
# dir. This kernel reads the helper's pid from it and plants something at the helper's temp name
# (`<status>.tmp.<helper pid>`) before exiting: a FIFO (would block the root helper's open forever),
# a directory, or a symlink to a host path. argv: MODE STATUS_PATH
import json
import os
import sys

mode, status = sys.argv[1], sys.argv[2]
with open(status) as f:
    helper = json.load(f)["helper_pid"]
tmp = f"{status}.tmp.{helper}"
if mode == "fifo":
    os.mkfifo(tmp)
elif mode == "dir":
    os.mkdir(tmp)
else:
    os.symlink("/etc/cellgate-probe-target", tmp)
print(f"planted a {mode} at {tmp}", flush=True)
