"""Pulling the program out of a completion (no sandbox needed)."""

from __future__ import annotations

from boundlab.tasks.base import Problem
from boundlab.verify.code import code_blocks, extract_program, program_for

PROMPT = 'from typing import List\n\n\ndef add(xs: List[int]) -> int:\n    """Sum."""\n'


def run(program: str, call: str):
    ns: dict = {}
    exec(compile(program, "<p>", "exec"), ns)
    return eval(call, ns)


def test_code_blocks_languages_and_unclosed_fence():
    text = "intro\n```python\na = 1\n```\nmid\n```\nb = 2\n```\n```bash\nls\n```\n```py\nc = 3"
    assert code_blocks(text) == [("python", "a = 1"), ("", "b = 2"), ("bash", "ls"),
                                 ("py", "c = 3")]


def test_raw_continuation_is_prompt_plus_completion():
    prog = extract_program("    return sum(xs)\n", prefix=PROMPT, entry_point="add")
    assert prog.startswith(PROMPT)
    assert run(prog, "add([1, 2, 3])") == 6


def test_raw_continuation_cut_at_top_level_tests_and_prints():
    completion = ("    return helper(xs)\n\n\ndef helper(xs):\n    return sum(xs)\n\n\n"
                  "print(add([1]))\nassert add([1]) == 2\nif __name__ == '__main__':\n    pass\n")
    prog = extract_program(completion, prefix=PROMPT, entry_point="add")
    assert "print(" not in prog and "assert" not in prog and "__main__" not in prog
    assert "def helper" in prog  # helpers written after the function are kept
    assert run(prog, "add([4, 5])") == 9


def test_continuation_followed_by_a_closing_fence_and_prose():
    completion = ("    return sum(xs)\n```\n\nThis adds the numbers. ```python\n"
                  "print(add([1]))\n```\n")
    prog = extract_program(completion, prefix=PROMPT, entry_point="add")
    assert "print(" not in prog and "This adds" not in prog
    assert run(prog, "add([1, 2])") == 3


def test_truncated_continuation_is_trimmed_to_compile():
    completion = "    return sum(xs)\n\n\ndef other(x):\n    return (x +\n"  # cut off mid-line
    prog = extract_program(completion, prefix=PROMPT, entry_point="add")
    compile(prog, "<p>", "exec")
    assert "def other" not in prog
    assert run(prog, "add([2, 2])") == 4


def test_fenced_block_with_full_function_keeps_prompt_imports_and_helpers():
    completion = ("Here you go:\n```python\ndef add(xs: List[int]) -> int:\n"
                  "    return sum(xs) * 1\n"
                  "```\nThis sums the list.")
    prog = extract_program(completion, prefix=PROMPT, entry_point="add")
    assert prog.startswith(PROMPT)  # `List` comes from the prompt's import
    assert run(prog, "add([1, 1])") == 2


def test_fenced_body_only_continues_the_prompt():
    prog = extract_program("```python\n    return len(xs)\n```", prefix=PROMPT, entry_point="add")
    assert run(prog, "add([7, 7, 7])") == 3


def test_several_blocks_definition_helpers_kept_examples_dropped():
    completion = (
        "First a helper:\n```python\nimport math\n\ndef double(x):\n    return 2 * x\n```\n"
        "A first try:\n```python\ndef add(xs):\n    return 0\n```\n"
        "Final answer:\n```python\ndef add(xs):\n    return double(sum(xs))\n```\n"
        "Usage:\n```python\nprint(add([1, 2]))\n```\n")
    prog = extract_program(completion, entry_point="add")
    assert "print(" not in prog
    assert "return 0" not in prog  # the last definition wins, earlier tries are dropped
    assert run(prog, "add([1, 2])") == 6


def test_stdio_program_is_the_last_block():
    completion = "```python\nprint('draft')\n```\nBetter:\n```python\nprint(int(input()) * 2)\n```"
    assert extract_program(completion) == "print(int(input()) * 2)\n"


def test_non_python_blocks_are_ignored():
    completion = "```text\n3\n```\n```python\nx = 1\n```\n```output\n1\n```"
    assert extract_program(completion) == "x = 1\n"


def test_raw_code_without_prefix_or_fence():
    assert extract_program("import sys\nprint(sum(map(int, sys.stdin.read().split())))\n") == \
        "import sys\nprint(sum(map(int, sys.stdin.read().split())))\n"


def test_empty_completion_has_no_program():
    p = Problem("p", PROMPT, "", {"kind": "function", "entry_point": "add", "test": "",
                                  "continuation": True})
    assert program_for(p, "") is None
    assert program_for(p, "   \n") is None
    assert extract_program("") is None


def test_program_for_uses_prompt_only_for_continuation_tasks():
    cont = Problem("a", PROMPT, "", {"kind": "function", "entry_point": "add", "test": "",
                                     "continuation": True})
    chat = Problem("b", "Write add(xs).", "", {"kind": "function", "entry_point": "add",
                                               "test": "", "continuation": False})
    assert program_for(cont, "    return 1\n").startswith(PROMPT)
    prog = program_for(chat, "```python\ndef add(xs):\n    return 1\n```")
    assert prog == "def add(xs):\n    return 1\n"
