"""What runs inside each sandbox worker. Standard library only.

Processes inside one worker's sandbox (all one unprivileged uid, no capabilities):

    judge    talks to the parent (stdin/stdout at start), runs the dataset's test code, never runs
             model code
     └ forker   forked at start-up, before any job: its memory never holds a test or an
                expected output
        └ setup    per program: a new user namespace, then new pid, mount and ipc namespaces
           └ program  pid 1 of its own pid namespace; private tmpfs /tmp and fresh /proc; rlimits;
                      capabilities dropped; seccomp deny-list; then the model's code

Why the split. Model code may read all of its own memory, so it is forked from the forker, whose
memory has only ever seen programs and stdin. Tests run in the judge: the program only answers
"call f(args)" requests, with plain data encoded as tagged JSON that the judge decodes strictly,
so an object whose `__eq__` is always True, rebound builtins or a patched harness cannot pass a
test. The judge and forker are non-dumpable and live outside the program's pid namespace, so the
program can neither signal nor ptrace them; it holds no fd of theirs except its own RPC socket.
When the program's pid-1 dies, the kernel kills everything left in its namespace (sleepers,
double-forked daemons), and its tmpfs goes with its mount namespace.

Verdicts: "passed" comes only from the judge finishing the tests. A program's exit code, its
output and its RPC replies are data; none of them can say "passed".

The parts, in the order they are loaded (each imports only parts above it):

    codec     tagged JSON for plain data, both directions
    framing   length-prefixed JSON frames on pipes and on sockets that carry fds
    harness   in the program, after confinement: load the model's code, answer calls
    confine   the setup process and the program's own set-up (namespaces, fds, limits, seccomp)
    forker    spawns each program, enforces its wall clock, reaps it, reports its exit
    channel   the judge's end of one program: RPC with a deadline, captured stderr/stdout
    judge     runs the tests against one program and classifies how the run ended
    main      the judge process: fork the forker, self-test, serve the parent's jobs

How it gets into the sandbox. The package is not visible in there, so the parent ships it as one
`python -I -S -c` script (`boundlab.sandbox.launch.worker_script`): the text of every file here,
loaded in the order above as modules of a package named `_worker`, then `main.main()`. Not a
read-only bind of this directory: the package can live anywhere (an editable checkout, a venv),
and as root bubblewrap runs under an unprivileged uid that may not be able to traverse it, so the
root launcher would have to stage one more host path per worker. Shipping the text needs no new
mount and leaves the sandbox's file system as it was: the OS and the interpreter's prefix,
read-only.
"""

# Pure parts, importable on the host for tests (nothing here starts a process).
from .codec import _dumps, decode, encode
from .judge import free_names

__all__ = ["_dumps", "decode", "encode", "free_names"]
