# naive_loop.py -- the same-run reference of bench_jobs.sh: the simplest
# scheduler there is. It sleeps to the next instant (every second at
# OFFSET s past it), forks, executes the command, waits for it, again, RUNS
# times. Before each fork it prints "tick <instant in s>" to stdout, where
# the command's own output follows.
#
# usage: python3 naive_loop.py RUNS OFFSET COMMAND [ARG...]
import math
import os
import sys
import time


def main():
    runs, offset, cmd = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3:]
    for _ in range(runs):
        now = time.time()
        at = math.floor(now - offset) + 1 + offset
        time.sleep(max(0.0, at - time.time()))
        sys.stdout.write("tick %.3f\n" % at)
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:
            os.execvp(cmd[0], cmd)
        os.waitpid(pid, 0)


main()
