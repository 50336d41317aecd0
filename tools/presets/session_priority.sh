# Sourced by the background-job scripts here. Under `setsid` a job is its own scheduler autogroup (Linux,
# kernel.sched_autogroup_enabled=1), and a process's nice then ranks it only within its group: two groups share
# the CPUs equally whatever their nice (a nice-19 training took over half the cores from a test run beside it).
# So a script that leads its session (started by setsid) sets its whole group's nice to 19 (/proc/self/autogroup).
lower_session_priority() {
  [ "$(ps -o sid= -p $$ | tr -d ' ')" = "$$" ] && [ -w /proc/self/autogroup ] && echo 19 > /proc/self/autogroup 2>/dev/null
  return 0
}
