# SPDX-License-Identifier: BSD-3-Clause
# escape_probe.R: the core of the isolation battery, from R: file access, system(), sockets, /proc and
# the environment. Prints held:/ESCAPED: per try; exits 77 when every try held, 1 when one escaped
# (nsjail's convention). A bare run as root leaves the host as it was (a file it manages to create is
# removed). Usage: Rscript escape_probe.R CANARY SLEEPER_PID MARKER PORT SECRET_NAME SECRET_VALUE
args <- commandArgs(trailingOnly = TRUE)
if (length(args) != 6) { cat("usage: escape_probe.R CANARY PID MARKER PORT NAME VALUE\n"); quit(status = 2) }
canary <- args[1]; sleeper <- args[2]; marker <- args[3]; port <- as.integer(args[4])
secret_name <- args[5]; secret_value <- args[6]
escaped <- FALSE
report <- function(bad, what) {
  cat(if (bad) "ESCAPED: " else "held: ", what, "\n", sep = "")
  if (bad) escaped <<- TRUE
}
readable <- function(path) !inherits(try(readLines(path, n = 1, warn = FALSE), silent = TRUE), "try-error")

# Files: host secrets, a host file of the test's, writes outside the sandbox.
report(readable("/etc/shadow"), "readLines /etc/shadow")
report(readable(canary), paste("readLines host file", canary))
report(file.exists("/etc/ssh") || file.exists("/etc/ssl/private"), "file.exists /etc/ssh or /etc/ssl/private")
for (dir in c("/usr/lib", "/etc", "/")) {
  f <- file.path(dir, paste0(".cellgate-probe-", Sys.getpid()))
  ok <- suppressWarnings(file.create(f))
  if (ok) unlink(f)
  report(ok, paste("create a file in", dir))
}

# system(): the shell sees what R sees.
report(system("cat /etc/shadow > /dev/null 2>&1") == 0, "system: cat /etc/shadow")
uid <- system("id -u", intern = TRUE)
report(!identical(uid, "1000"), paste("system: id -u is", uid))
ps <- system("ps -eo args", intern = TRUE)
seen <- any(grepl(paste0("/sleeper ", marker), ps, fixed = TRUE))  # the sleeper's own command line, not ours
report(seen || length(ps) > 12, paste("system: ps sees", length(ps) - 1, "processes, the host sleeper", if (seen) "among them" else "not"))
report(system(paste("kill -0", sleeper, "2>/dev/null")) == 0, paste("system: kill -0 host pid", sleeper))

# /proc: only the jail's own processes.
pids <- suppressWarnings(as.integer(list.files("/proc")))
pids <- pids[!is.na(pids)]
report(length(pids) > 12 || sleeper %in% pids, paste("/proc lists", length(pids), "pids"))

# Sockets: the host's loopback listener, and any route out.
con <- try(suppressWarnings(socketConnection("127.0.0.1", port, blocking = TRUE, open = "r+", timeout = 3)), silent = TRUE)
report(!inherits(con, "try-error"), paste("socketConnection to the host's 127.0.0.1 port", port))
if (!inherits(con, "try-error")) close(con)
routes <- readLines("/proc/net/route", warn = FALSE)
report(length(routes) > 1, paste("/proc/net/route has", length(routes) - 1, "routes"))

# The environment: nothing of the caller's.
report(identical(Sys.getenv(secret_name), secret_value), paste("Sys.getenv of the caller's", secret_name))

quit(status = if (escaped) 1 else 77)
