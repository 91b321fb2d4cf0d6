"""The Python scripts' side of benchmarks/results-write: what a script prints is also
captured, and at the end handed to results-write as benchmarks/results/NAME.md."""
import contextlib
import io
import os
import subprocess
import sys

WRITER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results-write")


class _Tee(io.TextIOBase):
    def __init__(self, out):
        self.out, self.buf = out, io.StringIO()

    def write(self, s):
        self.out.write(s)
        self.buf.write(s)
        return len(s)

    def flush(self):
        self.out.flush()


@contextlib.contextmanager
def published(name, table_path, plot="", script=""):
    """Run the body with its printed report captured; when it ends without an exception,
    write the report to table_path and publish it with the command line of this run
    (benchmarks/SCRIPT, default benchmarks/NAME)."""
    state = subprocess.run([WRITER, "start"], capture_output=True, text=True,
                           check=True).stdout.strip()
    tee = _Tee(sys.stdout)
    with contextlib.redirect_stdout(tee):
        yield
    sys.stdout.flush()
    with open(table_path, "w") as f:
        f.write(tee.buf.getvalue())
    subprocess.run([WRITER, name, state, table_path, plot, "benchmarks/" + (script or name)] + sys.argv[1:],
                   check=True)
