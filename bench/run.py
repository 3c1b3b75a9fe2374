#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# bench/run.py: runs every figure script in one go and prints one table of figures, ratios and targets.
"""One command for all of bench/:

    bench/run.py --cellgate build/bin/cellgate            full run (minutes; 200 kernels)
    bench/run.py --cellgate build/bin/cellgate --quick    smoke run: what CI runs (ctest bench.quick)

A figure script is any bench/*/*.py with the line `# cellgate-bench: figures` among its first 20
lines. It is run as `/usr/bin/python3 SCRIPT --jsonl --cellgate BIN [--quick] [ARGS]` and prints one
JSON object per line on stdout (other lines are ignored, stderr passes through; a script that fails
has its last stderr lines repeated after the table, with the problems, where a CI log's tail keeps them):

    {"figure": "exec 1+1 p50", "backend": "cellgate", "value": 1.23, "unit": "ms",
     "target": "<= floor+0.2", "group": "hot path"}

backend defaults to "cellgate"; reference backends (floor, jupyter_server, ...) report the same
figure without a target. value null means the measurement failed. target is null or one of
  "<= 20"            absolute
  ">= 0.9x floor"    a multiple of another backend's value for the same figure
  "<= floor+0.2"     another backend's value plus a margin
The table shows each figure's value per backend, cellgate's ratio to each reference, the target and
whether cellgate meets it. --validate (CI) exits 1 unless every script exits 0 and every line is
well-formed with a value; it does not require targets to be met (benchmarks, not timed tests).
"""
import argparse
import collections
import ctypes
import glob
import json
import math
import mmap
import os
import platform
import re
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MARKER = "# cellgate-bench: figures"
PYTHON = "/usr/bin/python3"
TARGET_RE = [
    (re.compile(r"^(<=|>=)\s*(-?[0-9.]+)$"), "abs"),
    (re.compile(r"^(<=|>=)\s*([0-9.]+)x\s+([\w.-]+)$"), "times"),
    (re.compile(r"^(<=|>=)\s*([\w.-]+)\s*\+\s*([0-9.]+)$"), "plus"),
]
SETTLE_S, QUICK_SETTLE_S = 60.0, 15.0  # at most this long between two scripts (see settle)
STDERR_TAIL = 25  # lines of a failed script's stderr repeated at the end of the output
REFERENCE_ORDER = ["floor", "jupyter_server", "jupyter_server_nodelay", "cold_start", "cold_jail"]


def find_scripts():
    out = []
    for path in sorted(glob.glob(os.path.join(HERE, "*", "*.py"))):
        try:
            with open(path, errors="replace") as f:
                head = [next(f, "") for _ in range(20)]
        except OSError:
            continue
        if any(line.strip() == MARKER for line in head):
            out.append(path)
    return out


def parse_target(expr):
    """-> (op, kind, number, backend) or None if malformed."""
    for rx, kind in TARGET_RE:
        m = rx.match(expr.strip())
        if not m:
            continue
        if kind == "abs":
            return m.group(1), kind, float(m.group(2)), None
        if kind == "times":
            return m.group(1), kind, float(m.group(2)), m.group(3)
        return m.group(1), kind, float(m.group(3)), m.group(2)
    return None


def check_line(obj):
    """Problems with one figure line ([] when well-formed)."""
    bad = []
    if not isinstance(obj.get("figure"), str) or not obj["figure"]:
        bad.append("figure must be a non-empty string")
    v = obj.get("value")
    if not (isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)):
        bad.append("value must be a finite number (got %r)" % (v,))
    if not isinstance(obj.get("unit", ""), str):
        bad.append("unit must be a string")
    if not isinstance(obj.get("backend", "cellgate"), str):
        bad.append("backend must be a string")
    t = obj.get("target")
    if t is not None and (not isinstance(t, str) or parse_target(t) is None):
        bad.append("target %r is not '<= N', '>= Kx BACKEND' or '<= BACKEND+N'" % (t,))
    return bad


def evaluate(target, figure_values):
    """-> (met or None, threshold or None) for cellgate's value of one figure."""
    parsed = parse_target(target)
    value = figure_values.get("cellgate")
    if parsed is None or value is None:
        return None, None
    op, kind, num, ref = parsed
    if kind == "abs":
        threshold = num
    else:
        base = figure_values.get(ref)
        if base is None:
            return None, None
        threshold = base * num if kind == "times" else base + num
    return (value <= threshold if op == "<=" else value >= threshold), threshold


def fmt(v):
    if v is None:
        return "fail"
    if isinstance(v, int) or (abs(v) >= 100 and v == v):
        return "%.0f" % v
    return "%.3g" % v


def hypervisor():
    """What the figures ran on: the guest's own dmesg line when it names its hypervisor (a PVM guest
    says "running under PVM"; root only), else lscpu's vendor (CPUID), else bare metal. Page faults
    and TLB shootdowns cost very different amounts under each, so figures name it (issue 26)."""
    try:
        out = subprocess.run(["dmesg"], capture_output=True, text=True, timeout=5).stdout
        for line in out.splitlines():
            low = line.lower()
            if "hypervisor detected" in low or "running under" in low or " pvm" in low:
                return line.split("]", 1)[-1].strip()
    except (OSError, subprocess.SubprocessError):
        pass
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=5).stdout
        for line in out.splitlines():
            if line.startswith("Hypervisor vendor:"):
                return line.split(":", 1)[1].strip() + " guest"
    except (OSError, subprocess.SubprocessError):
        pass
    try:
        with open("/proc/cpuinfo") as f:
            return "a guest (unknown hypervisor)" if " hypervisor" in f.read() else "bare metal"
    except OSError:
        return "unknown hypervisor"


def fault_cost_us(pages=2048, tries=3):
    """Microseconds per minor page fault here: the first write to each 4 KiB page of a fresh anonymous
    mapping (trap, allocation, zeroing; the best of `tries`, so the machine's load weighs least). What
    separates hosts most for a fork server (issue 26), and what a hypervisor's name does not say: a PVM
    guest whose dmesg no longer holds its boot line reads as a KVM guest. It also moves with the host's
    memory: 1.4-25 us within minutes on the VM of 2026-12-03, which reports free pages to its host
    (page_reporting), so reusing them faults there too. Name it with the figures it explains."""
    best = None
    for _ in range(tries):
        m = mmap.mmap(-1, pages * mmap.PAGESIZE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        try:
            if hasattr(mmap, "MADV_NOHUGEPAGE"):
                m.madvise(mmap.MADV_NOHUGEPAGE)  # 4 KiB faults whatever the THP mode
            t0 = time.perf_counter()
            for off in range(0, pages * mmap.PAGESIZE, mmap.PAGESIZE):
                m[off] = 1
            took = (time.perf_counter() - t0) / pages * 1e6
        finally:
            m.close()
        best = took if best is None else min(best, took)
    return best


def machine_line():
    """One line naming the host: name, cores, CPU model, memory, hypervisor, kernel, the cost of a fault."""
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "?")
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2 ** 30
    return "%s, %d cores (%s), %.0f GiB, %s, Linux %s, a minor page fault %.1f us" % (
        platform.node(), os.cpu_count(), cpu, mem, hypervisor(), platform.release(), fault_cost_us())


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def become_subreaper():
    """Makes the processes that the scripts leave behind (a gateway's jails and kernels winding down
    after it exited) this process's children instead of init's (PR_SET_CHILD_SUBREAPER, prctl(2)), so
    that leftovers() counts this run's processes only, not those of other runs or tests beside it."""
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


SUBREAPER = False


def leftovers():
    """Processes of an earlier script still winding down: this run's descendants when it is a
    subreaper (and those that have exited are reaped here, between scripts, when no script runs);
    otherwise, any gateway or jail on the host."""
    if SUBREAPER:
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
    parent, found = {}, []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open("/proc/%s/stat" % pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            with open("/proc/%s/comm" % pid) as f:
                comm = f.read().strip()
        except (OSError, IndexError):
            continue
        if fields[0] == "Z":
            continue
        parent[int(pid)] = int(fields[1])
        if not SUBREAPER and (comm.startswith("cellgate") or comm == "jupyter-server"):
            found.append(int(pid))
    if not SUBREAPER:
        return found
    for pid in parent:
        p = parent[pid]
        while p in parent and p != os.getpid():
            p = parent[p]
        if p == os.getpid():
            found.append(pid)
    return found


def cpu_busy(window=0.5):
    """Fraction of the machine's CPU time that was not idle (or iowait) over the next `window` seconds."""
    def sample():
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        return sum(v), v[3] + v[4]
    t0, i0 = sample()
    time.sleep(window)
    t1, i1 = sample()
    return 1.0 - (i1 - i0) / max(1, t1 - t0)


def settle(limit):
    """Each script starts on a machine without the previous one's processes: tearing 200 jailed
    kernels down takes seconds of CPU, which would land in the next script's latency figures. The
    kernel's own share of that (network namespaces are freed by a kworker, cgroups by RCU callbacks)
    outlives the processes, so this also waits for the CPUs to be mostly idle (bounded by `limit`).
    The first wait counts this run's own processes (become_subreaper); the second any CPU use on the
    host: beside other tests (ctest -j2) or other engineers' work it lasts the whole limit. Returns the
    seconds waited."""
    t0 = time.monotonic()
    deadline = t0 + limit
    while leftovers() and time.monotonic() < deadline:
        time.sleep(0.5)
    time.sleep(2)
    while cpu_busy() > 0.25 and time.monotonic() < deadline:
        pass
    return time.monotonic() - t0


def run_script(path, a):
    # --quick (CI) waits less: its figures are checked for form, not published, and on a busy host
    # nine full waits took 540 s of a run that must end within ctest's TIMEOUT on a 2x slower one.
    waited = settle(QUICK_SETTLE_S if a.quick else SETTLE_S)
    cmd = [PYTHON, path, "--jsonl", "--cellgate", a.cellgate] + (["--quick"] if a.quick else [])
    name = os.path.basename(path)
    for spec in a.script_args:
        key, _, extra = spec.partition("=")
        if key in (name, os.path.splitext(name)[0]):
            cmd += extra.split()
    print("# bench: %s (after %.0f s settling, load %s)" % (" ".join(cmd), waited, loadavg()), file=sys.stderr,
          flush=True)
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace",
                            env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
    out, tail = [], collections.deque(maxlen=STDERR_TAIL)

    def pass_stderr():  # live, as before, and its last lines kept for the end of the output
        for line in proc.stderr:
            sys.stderr.write(line)
            sys.stderr.flush()
            tail.append(line.rstrip("\n"))
    readers = [threading.Thread(target=lambda: out.append(proc.stdout.read()), daemon=True),
               threading.Thread(target=pass_stderr, daemon=True)]
    for r in readers:
        r.start()
    lines, problems = [], []
    try:
        proc.wait(timeout=a.timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        problems.append("%s timed out after %.0f s" % (name, a.timeout))
    for r in readers:  # a leftover grandchild holding a pipe must not hang the run
        r.join(timeout=10)
    for raw in "".join(out).splitlines():
        if not raw.startswith("{"):
            continue
        try:
            obj = json.loads(raw)
        except ValueError as e:
            problems.append("%s: not JSON (%s): %s" % (name, e, raw[:120]))
            continue
        obj.setdefault("backend", "cellgate")
        obj.setdefault("group", os.path.basename(os.path.dirname(path)))
        for b in check_line(obj):
            problems.append("%s: %s: %s" % (name, obj.get("figure"), b))
        lines.append(obj)
    last = next((line.strip() for line in reversed(tail) if line.strip()), "")
    if proc.returncode != 0 and not problems:
        problems.append("%s exited with %d%s" % (name, proc.returncode, (": " + last[:300]) if last else ""))
    if not lines:
        problems.append("%s printed no figures" % name)
    print("# bench: %s done in %.0f s" % (name, time.monotonic() - t0), file=sys.stderr, flush=True)
    failed = proc.returncode != 0 or not lines
    return lines, problems, (list(tail) if failed else [])


def build_table(all_lines):
    figures, values, targets, units, groups = [], {}, {}, {}, {}
    backends = []
    for obj in all_lines:
        f, b = obj["figure"], obj["backend"]
        if f not in values:
            figures.append(f)
            values[f] = {}
        if b not in backends:
            backends.append(b)
        v = obj.get("value")
        values[f][b] = v if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None
        units[f] = obj.get("unit", "")
        groups[f] = obj.get("group", "")
        if obj.get("target"):
            targets[f] = obj["target"]
    refs = [r for r in REFERENCE_ORDER if r in backends] + \
           [b for b in backends if b not in REFERENCE_ORDER and b != "cellgate"]
    head = ["group", "figure", "unit", "cellgate"] + refs + ["cellgate/" + r for r in refs] + ["target", "met"]
    rows = []
    for f in figures:
        vals = values[f]
        row = [groups[f], f, units[f], fmt(vals["cellgate"]) if "cellgate" in vals else "-"]
        row += [fmt(vals[r]) if r in vals else "-" for r in refs]
        for r in refs:
            c, x = vals.get("cellgate"), vals.get(r)
            row.append("%.2fx" % (c / x) if c is not None and x else "-")
        met, threshold = evaluate(targets[f], vals) if f in targets else (None, None)
        tgt = targets.get(f, "")
        if tgt and threshold is not None and parse_target(tgt)[1] != "abs":
            tgt += " (%s)" % fmt(threshold)
        row += [tgt, "" if f not in targets else ("yes" if met else ("NO" if met is False else "?"))]
        rows.append(row)
    return head, rows


def render(head, rows, markdown):
    if markdown:
        out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        out += ["| " + " | ".join(r) + " |" for r in rows]
        return "\n".join(out)
    widths = [max(len(r[i]) for r in [head] + rows) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in [head] + rows]
    return "\n".join([lines[0], "-" * len(lines[0])] + lines[1:])


def main():
    p = argparse.ArgumentParser(description="run every bench figure script; print one table")
    p.add_argument("--cellgate", default=os.environ.get("CELLGATE_BIN"), help="cellgate binary")
    p.add_argument("--quick", action="store_true", help="small sizes (CI)")
    p.add_argument("--validate", action="store_true",
                   help="exit 1 unless every script ran and every figure line is well-formed")
    p.add_argument("--only", default="", help="comma list of script names to run (default: all)")
    p.add_argument("--script-args", action="append", default=[], metavar="SCRIPT=ARGS",
                   help="extra arguments for one script, e.g. density_bench=--kernels 50")
    p.add_argument("--markdown", metavar="FILE", help="also write the table as Markdown to FILE")
    p.add_argument("--timeout", type=float, default=3600, help="seconds per script")
    p.add_argument("--list", action="store_true", help="list the figure scripts and exit")
    a = p.parse_args()
    global SUBREAPER
    SUBREAPER = become_subreaper()
    scripts = find_scripts()
    if a.only:
        keep = {s.strip() for s in a.only.split(",") if s.strip()}
        scripts = [s for s in scripts if os.path.basename(s) in keep or
                   os.path.splitext(os.path.basename(s))[0] in keep]
    if a.list:
        print("\n".join(os.path.relpath(s, HERE) for s in scripts))
        return 0
    if not (a.cellgate and os.access(a.cellgate, os.X_OK)):
        print("cellgate binary missing: %r (--cellgate or CELLGATE_BIN)" % a.cellgate, file=sys.stderr)
        return 1
    a.cellgate = os.path.abspath(a.cellgate)
    load_before = loadavg()
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    all_lines, problems, tails = [], [], []
    for s in scripts:
        lines, probs, tail = run_script(s, a)
        all_lines += lines
        problems += probs
        if tail:
            tails.append((os.path.basename(s), tail))
    head, rows = build_table(all_lines)
    title = ("cellgate bench%s, %s; %s; load average %s before, %s after"
             % (" (--quick)" if a.quick else "", started, machine_line(), load_before, loadavg()))
    print(title)
    print(render(head, rows, False))
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(title + "\n\n" + render(head, rows, True) + "\n")
    # What failed goes last, after the table, where a CI log's tail keeps it: each failed script's last
    # stderr lines (its traceback, or its own one-line verdict), then one line per problem.
    sys.stdout.flush()
    for name, tail in tails:
        print("--- %s failed; the last %d lines of its stderr:" % (name, len(tail)), file=sys.stderr)
        for line in tail:
            print("  %s| %s" % (name, line), file=sys.stderr)
    for pr in problems:
        print("problem: " + pr, file=sys.stderr)
    sys.stderr.flush()
    if a.validate and problems:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
