% SPDX-License-Identifier: BSD-3-Clause
% escape_probe.m: the core of the isolation battery, from Octave: file access, system(), sockets
% (webread), /proc and the environment. Prints held:/ESCAPED: per try; exits 77 when every try held,
% 1 when one escaped. A bare run as root leaves the host as it was.
% Usage: octave-cli escape_probe.m CANARY SLEEPER_PID MARKER PORT SECRET_NAME SECRET_VALUE
1;
global escaped
escaped = false;
function report(bad, what)
  global escaped
  if (bad)
    printf("ESCAPED: %s\n", what);
    escaped = true;
  else
    printf("held: %s\n", what);
  end
end

args = argv();
if (numel(args) != 6)
  disp("usage: escape_probe.m CANARY PID MARKER PORT NAME VALUE");
  exit(2);
end
[canary, sleeper, marker, port, secret_name, secret_value] = args{:};

% Files: host secrets, a host file of the test's, writes outside the sandbox.
report(fopen("/etc/shadow", "r") >= 0, "fopen /etc/shadow");
report(fopen(canary, "r") >= 0, ["fopen host file " canary]);
report(exist("/etc/ssh", "dir") || exist("/etc/ssl/private", "dir"), "exist /etc/ssh or /etc/ssl/private");
for d = {"/usr/lib", "/etc", "/"}
  f = fullfile(d{1}, sprintf(".cellgate-probe-%d", getpid()));
  fd = fopen(f, "w");
  if (fd >= 0)
    fclose(fd);
    delete(f);
  end
  report(fd >= 0, ["create a file in " d{1}]);
end

% system(): the shell sees what Octave sees.
report(system("cat /etc/shadow > /dev/null 2>&1") == 0, "system: cat /etc/shadow");
[~, uid] = system("id -u");
report(!strcmp(strtrim(uid), "1000"), ["system: id -u is " strtrim(uid)]);
[~, ps] = system("ps -eo args");
lines = strsplit(strtrim(ps), "\n");
seen = !isempty(strfind(ps, ["/sleeper " marker]));  % the sleeper's own command line, not ours
report(seen || numel(lines) > 12, sprintf("system: ps sees %d processes (host sleeper seen: %d)", numel(lines) - 1, seen));
report(system(["kill -0 " sleeper " 2>/dev/null"]) == 0, ["system: kill -0 host pid " sleeper]);

% /proc: only the jail's own processes.
pids = str2double(readdir("/proc"));
pids = pids(!isnan(pids));
report(numel(pids) > 12 || any(pids == str2double(sleeper)), sprintf("/proc lists %d pids", numel(pids)));

% Sockets: the host's loopback listener (an HTTP answer, through libcurl), and any route out.
try
  webread(sprintf("http://127.0.0.1:%s/", port), weboptions("Timeout", 3));
  ok = true;
catch
  ok = false;
end
report(ok, ["webread from the host's 127.0.0.1 port " port]);
routes = strsplit(strtrim(fileread("/proc/net/route")), "\n");
report(numel(routes) > 1, sprintf("/proc/net/route has %d routes", numel(routes) - 1));

% The environment: nothing of the caller's.
report(strcmp(getenv(secret_name), secret_value), ["getenv of the caller's " secret_name]);

if (escaped)
  exit(1);
end
exit(77);
