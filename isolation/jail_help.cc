// SPDX-License-Identifier: BSD-3-Clause
// jail_help: the --help text of cellgate-jail (every option, defaults, exit codes).
#include "isolation/jail_options.h"

namespace cellgate::isolation {

std::string help_text() {
  return R"(usage: cellgate-jail [options] -- CMD ARGS...

Builds a jail (user, pid, mount, net, ipc, uts and cgroup namespaces; a minimal read-only
root; no capabilities; seccomp; cgroup limits) and runs CMD in it as uid/gid 1000 `sandbox`
with cwd and HOME /workspace. A jail init is pid 1; CMD is pid 2.

Options (VALUE may also be given as --option=VALUE):
  --name ID               jail name [a-zA-Z0-9_-]{1,64}; names the cgroup dir (<name>-<pid> while
                          another jail still holds <name>). Default jail-<pid>
  --policy FILE           JSON policy layered on the built-in default policy (isolation/POLICY.md)
  --workspace DIR         host dir bound read-write at /workspace (idmapped: on-disk uid/gid
                          N <-> inside N, so `sandbox` files are stored as 1000:1000; a root-owned
                          DIR is chowned to 1000:1000 first only when empty and not world-writable).
                          Default: an empty tmpfs. A symlink anywhere in DIR's path is refused (126)
  --bind-same DIR         bind a host dir read-write at the same path inside (repeatable; no symlinks)
  --connection-file FILE  same as --bind-same dirname(FILE)
  --ro-bind SRC[:DST]     extra read-only bind (repeatable); DST not under /usr, /proc, /dev,
                          /workspace, nor /, /etc or /tmp itself
  --env K=V               kernel environment entry (repeatable). Nothing is inherited; defaults
                          PATH, HOME=/workspace, LANG=C.UTF-8, TERM=dumb, USER and
                          LOGNAME=sandbox, SHELL=/bin/bash, MPLBACKEND=Agg, IPYTHONDIR=/tmp/.ipython,
                          XDG_CACHE_HOME=/tmp/.cache, MPLCONFIGDIR=/tmp/.config/matplotlib are
                          added when absent (policy env, then --env-file, then --env, win).
                          Values on a command line are visible to every host user (ps): pass
                          anything private with --env-file
  --env-file FILE         environment entries "K=V", each ended by a NUL byte (as /proc/PID/environ;
                          at most 1 MiB and 256 entries), read before the jail is built
  --hostname NAME         default "sandbox"
  --memory BYTES          cgroup memory limit, no swap (K/M/G suffixes). Default 1G
  --pids N                cgroup pids limit (threads count). Default 256
  --cpu CORES             CFS quota in cores, e.g. 1 or 0.5. Default 1
  --nofile N              RLIMIT_NOFILE. Default 1024
  --fsize BYTES           RLIMIT_FSIZE. Default 1G
  --tmp-size BYTES        size of the /tmp and of the /dev/shm tmpfs. Default 256M
  --uid-range START:COUNT host uid range split in 65536-uid slots, one per live jail (flock on
                          /run/cellgate/uids/<slot>.lock). Default 200000:67108864 (1024 jails)
  --status-file PATH      JSON status, replaced atomically on each change. Keep it (and any log
                          the gateway reads back) outside dirs the kernel can write (--bind-same,
                          --workspace): the kernel could rewrite it. Trust pids from --ready-fd.
                          The policy the jail was built with is recorded beside it, in
                          PATH.policy, for --join
  --kernel-log-bytes N    when stdout/stderr are a regular file (a log), the jail's output is relayed
                          into it and the file keeps only about the last N bytes (K/M/G suffixes;
                          it is rewritten to the newest N/2 when it reaches N). Default 1M
  --ready-fd N            one JSON line on fd N once CMD is exec'd or the jail failed
  --cgroup-root PATH      cgroup mount base instead of /sys/fs/cgroup; dirs are <base>/.../cellgate/<name>
  --cgroup-owner OWNER    put the jail's cgroup one level down, at .../cellgate/OWNER/<name>
                          ([a-zA-Z0-9_-]{1,200}, not "cellgate"): OWNER's jails share one CPU
                          weight among their siblings, however many there are. OWNER's dirs are
                          made when missing and removed with its last jail
  --kernels-cpu-weight W  write cpu.weight W (1-10000; v1: cpu.shares W*1024/100) to
                          .../cellgate itself: every jail's CPU together, against the processes
                          outside it (the gateway's). Default: left as it is
  --memory-merge on|off   on: the kernel (CMD, pid 2) sets PR_SET_MEMORY_MERGE before it runs, so
                          that KSM may merge its pages with identical pages of other processes
                          (Linux 6.4+; merging happens only while /sys/kernel/mm/ksm/run is 1,
                          which the jail does not touch). A merged page is a side channel between
                          the processes that share it: on only where the kernels' users may learn
                          what pages the others hold. Default off
  --no-cgroup             no cgroups (hosts without a writable cgroup tree; weaker: no memory,
                          pids or cpu limits, no cgroup.kill). The helper still needs root
  --egress SOCKET         network through the egress proxy (cellgate-egress) whose control socket
                          is SOCKET: the jail's init listens on 127.0.0.1:PORT inside the jail and
                          hands that socket to the proxy, which already holds this jail's policy
                          under --name. Without it the jail has loopback only
  --egress-port PORT      the proxy's port inside the jail. Default 3128 (the init keeps the
                          listener; the status file's egress_fd says at which fd)
  --egress-attach STATUS_FILE
                          with --egress SOCKET and --name NAME, no CMD: hand that running jail's
                          proxy endpoint to the proxy at SOCKET (a proxy restarted after a crash):
                          the jail is validated as for --join, the init's listener is taken with
                          pidfd_getfd and must be a listening socket of the jail's own network
                          namespace. Exit 0, 125 bad options, 126 it failed
  --join STATUS_FILE      run CMD inside that running jail instead of building one (below)
  --attach-workspace STATUS_FILE
                          with --workspace DIR and no CMD: mount DIR at /workspace in that running
                          jail (below)
  --help                  this text

Signals: SIGINT and SIGTERM (and SIGHUP, SIGQUIT, SIGUSR2) go to CMD's process group;
SIGUSR1 kills the whole jail at once. SIGKILL to the helper kills the jail (PDEATHSIG).

Exit status: CMD's exit code, or 128+signal; 125 bad options; 126 a setup stage failed
(`cellgate-jail: <stage>: <strerror>` on stderr, in the status file and on the ready fd).

Join mode: cellgate-jail --join STATUS_FILE [--env K=V]... [--env-file FILE] [--policy FILE] -- CMD ARGS...
Runs CMD inside the RUNNING jail whose --status-file is STATUS_FILE: its user, mount, pid, net,
ipc, uts and cgroup namespaces, its cgroups (CMD counts against its memory, pids and cpu limits),
its rlimits (RLIMIT_NOFILE and RLIMIT_FSIZE of its init; CORE, RTPRIO and NICE 0, as in the jail),
uid/gid 1000 `sandbox`, no capabilities, no_new_privs, the seccomp filter, umask and env of the
policy the jail was built with (recorded in STATUS_FILE.policy; --policy FILE replaces it), cwd
/workspace, an environment built like the jail's (defaults, policy env, --env-file, --env; nothing
inherited) and only stdin/stdout/stderr open. The caller's real-time scheduling, negative nice and
oom_score_adj, real-time I/O class and personality are shed exactly as the jail sheds them. CMD leads its
own session. Before joining, init_pid must be that jail's init: its parent is helper_pid (a
cellgate-jail), it is pid 1 of its own pid namespace, runs as host_uid and sits in the status
file's cgroup; a stale or forged file is refused. SIGINT, SIGTERM, SIGHUP, SIGQUIT and SIGUSR2
go to CMD's process group, SIGUSR1 sends it SIGKILL; SIGKILL to the join helper kills CMD
(PDEATHSIG); CMD dies with the jail; what CMD leaves in its process group is killed when CMD
exits. Exit status: CMD's, or 128+signal; 125 bad options (other options than --env,
--env-file and --policy with --join); 126 joining failed (`cellgate-jail: <stage>: <message>`).

Attach mode: cellgate-jail --attach-workspace STATUS_FILE --workspace DIR
Mounts the host dir DIR over the placeholder tmpfs at /workspace of the RUNNING jail whose
--status-file is STATUS_FILE (validated as for --join), as the jail itself would have: DIR is
opened without following symlinks, a fresh root-owned empty DIR is handed to uid 1000, and a
detached clone of it (open_tree) is idmapped to the jail's user namespace, nosuid and nodev, then
moved onto /workspace from inside the jail's mount namespace (setns). Nothing in the jail can
mount: the jail's processes only see the new mount (cd /workspace again to enter it). Refused
when /workspace in the jail is not the placeholder tmpfs. Used to hand a pre-started (pooled)
kernel to its owner. Exit status: 0; 125 bad options; 126 it failed (`cellgate-jail: <message>`).
)";
}

}  // namespace cellgate::isolation
