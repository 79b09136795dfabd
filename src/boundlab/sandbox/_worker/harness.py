"""Inside the program process, after confinement: load the model's code and serve it.

Function tasks: the program answers "names" and "call f(args)" requests on fd 3 with plain data
(see `codec`); the tests themselves never run here. Stdin/stdout tasks: the program runs as
`__main__` on fds 0/1/2. Nothing this code says is trusted: the model's code shares its process
and may have rewritten it by the time it answers.
"""

import builtins
import os
import sys

from .codec import _dumps, decode, encode
from .framing import recv_frame, send_frame


def _exc_info(e):
    return {"exc": type(e).__name__, "msg": str(e)[:300]}


def _fresh_module(name):
    import types
    mod = types.ModuleType(name)
    mod.__dict__["__builtins__"] = builtins
    sys.modules[name] = mod
    return mod.__dict__


def harness_function(program):
    """Serve RPC on fd 3: load the program, then answer names/call requests until EOF."""
    rpc = 3
    g = _fresh_module("__boundlab_program__")
    try:
        exec(compile(program, "<program>", "exec"), g)
        loaded = None
    except BaseException as e:  # noqa: BLE001 - SystemExit, KeyboardInterrupt: all are failures
        loaded = _exc_info(e)
    while True:
        req = recv_frame(rpc)
        if req is None:
            os._exit(0)
        if loaded is not None:
            reply = dict(loaded, phase="load")
        elif req.get("op") == "names":
            out = {}
            for n in req["names"]:
                if n not in g:
                    continue
                v = g[n]
                if isinstance(v, type(sys)):
                    out[n] = {"k": "module", "name": getattr(v, "__name__", "")}
                elif callable(v):
                    out[n] = {"k": "call"}
                else:
                    try:
                        out[n] = {"k": "value", "v": encode(v)}
                    except Exception:  # noqa: BLE001
                        pass
            reply = {"ok": out}
        else:
            try:
                args = decode(req["args"])
                kwargs = decode(req["kwargs"])
                result = g[req["name"]](*args, **kwargs)
            except BaseException as e:  # noqa: BLE001
                reply = _exc_info(e)
            else:
                try:
                    reply = {"ok": _dumps(encode(result))}
                except BaseException as e:  # noqa: BLE001 - not plain data: the result fails
                    reply = {"bad": f"cannot return it: {str(e)[:250]}"}
        try:
            send_frame(rpc, reply)
        except Exception:  # noqa: BLE001 - e.g. the reply does not encode
            send_frame(rpc, {"bad": "reply could not be sent"})


def harness_stdio(program):
    """Run the program as __main__ with fds 0/1/2 as its stdin/stdout/stderr."""
    import traceback
    g = _fresh_module("__main__")
    g["__file__"] = "/tmp/main.py"
    code = 0
    try:
        exec(compile(program, "main.py", "exec"), g)
    except SystemExit as e:
        c = e.code
        code = 0 if c is None else (c if isinstance(c, int) else 1)
        if not isinstance(c, (int, type(None))):
            try:
                print(c, file=sys.stderr)
            except Exception:  # noqa: BLE001
                pass
    except BaseException:  # noqa: BLE001
        try:
            traceback.print_exc()
        except Exception:  # noqa: BLE001
            pass
        code = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001
            code = code or 1
    os._exit(code & 0xFF)
