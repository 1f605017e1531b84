#!/usr/bin/env python3
# bench/genericplan.py NAME [ARG...]: EXPLAIN (ANALYZE, BUFFERS) of the generic plan (the plan
# verdictd runs its lists and the feed with) of statement NAME, its text and parameter types
# read from sql/statements/NAME.sql; ARG NULL passes NULL. The database is $URL (a libpq
# string), e.g. the cluster `KEEP=1 bench/historyprobe.sh` leaves running.
import os
import re
import subprocess
import sys

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
name, args = sys.argv[1], sys.argv[2:]
lines = open(f"{root}/sql/statements/{name}.sql").read().split("\n")
types = [m.group(1) for m in (re.match(r"-- \$\d+ (.*)", l) for l in lines) if m]
text = "\n".join(l for l in lines if not l.startswith("--")).strip()


def lit(a):
    return "NULL" if a == "NULL" else "'" + a.replace("'", "''") + "'"


sql = (f"SET plan_cache_mode = force_generic_plan;\n"
       f"PREPARE s ({', '.join(types)}) AS {text};\n"
       f"EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF) EXECUTE s "
       f"({', '.join(lit(a) for a in args)});\n")
sys.exit(subprocess.run(["psql", "-X", "-q", os.environ["URL"]], input=sql, text=True).returncode)
