"""Plain data across the program's RPC channel: tagged JSON.

Every JSON object is a one-key tag, so nothing is ambiguous. The program side converts what it
returns (subclasses of builtin containers become the builtin; anything else is refused); the
judge side builds only builtin values and never calls user code.
"""

import json

MAX_ITER_ITEMS = 1_000_000  # iterators returned by a program are materialised up to this

_SAFE_INT = 1 << 53


def encode(x, depth=0):
    if depth > 200:
        raise ValueError("value nested too deeply")
    t = type(x)
    if x is None or t is bool or t is str:
        return x
    if t is float:
        return x
    if isinstance(x, bool):
        return bool(x)
    if isinstance(x, int):
        x = int.__index__(x)
        return x if -_SAFE_INT < x < _SAFE_INT else {"I": hex(x)}
    if isinstance(x, float):
        return float.__float__(x)
    if isinstance(x, str):
        return str.__str__(x)
    d = depth + 1
    if isinstance(x, (bytes, bytearray)):
        return {"ba" if isinstance(x, bytearray) else "b": bytes(x).hex()}
    if isinstance(x, complex):
        return {"c": [complex.__complex__(x).real, complex.__complex__(x).imag]}
    if isinstance(x, list):
        return [encode(v, d) for v in list.__iter__(x)]
    if isinstance(x, tuple):
        return {"t": [encode(v, d) for v in tuple.__iter__(x)]}
    if isinstance(x, dict):
        return {"d": [[encode(k, d), encode(v, d)] for k, v in dict.items(x)]}
    if isinstance(x, frozenset):
        return {"f": [encode(v, d) for v in frozenset.__iter__(x)]}
    if isinstance(x, set):
        return {"s": [encode(v, d) for v in set.__iter__(x)]}
    if isinstance(x, range):
        return {"r": [x.start, x.stop, x.step]}
    mod = getattr(t, "__module__", "")
    if mod == "collections" and t.__name__ == "deque":
        return {"q": [encode(v, d) for v in x]}
    if hasattr(t, "__next__") and hasattr(t, "__iter__"):
        items = []
        for v in x:
            if len(items) >= MAX_ITER_ITEMS:
                raise ValueError("returned iterator is too long")
            items.append(encode(v, d))
        return {"it": items}
    raise TypeError(f"unsupported return type {t.__module__}.{t.__qualname__}")


_LIST_TAGS = {"t", "d", "s", "f", "q", "it", "c", "r"}
_STR_TAGS = {"I", "b", "ba"}


def _decode_tag(obj):
    if len(obj) != 1:
        raise ValueError("bad tagged value")
    (tag, v), = obj.items()
    if (tag in _LIST_TAGS and type(v) is not list) or (tag in _STR_TAGS and type(v) is not str):
        raise ValueError(f"bad payload for tag {tag!r}")
    if tag == "t":
        return tuple(v)
    if tag == "d":
        return {k: val for k, val in v}
    if tag == "s":
        return set(v)
    if tag == "f":
        return frozenset(v)
    if tag == "I":
        return int(v, 16)
    if tag == "b":
        return bytes.fromhex(v)
    if tag == "ba":
        return bytearray.fromhex(v)
    if tag == "c":
        return complex(float(v[0]), float(v[1]))
    if tag == "r":
        return range(int(v[0]), int(v[1]), int(v[2]))
    if tag == "q":
        import collections
        return collections.deque(v)
    if tag == "it":
        return iter(v)
    raise ValueError(f"unknown tag {tag!r}")


def _hook(obj):
    # json builds inner values first, so tuples/sets arrive here already decoded.
    return _decode_tag(obj)


def decode(text):
    return json.loads(text, object_hook=_hook)


def _dumps(obj):
    return json.dumps(obj, separators=(",", ":"))
