"""`probe.py export=`: chat messages (system + user) always for a chat task, and the exact prompt
string only when a tokenizer is given (rendered with its chat template)."""

import json

import boundlab.builtins  # noqa: F401
from boundlab.probe.runner import export_prompts
from boundlab.tasks import TASKS
from boundlab.worlds.toyworld.tokenizer import build_tokenizer

# Qwen2.5's chat template, reduced to what a system + user conversation uses.
QWEN_TEMPLATE = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
                 "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
INSTR = "\nPlease reason step by step, and put your final answer within \\boxed{}."


def rows(path):
    return [json.loads(x) for x in path.read_text().splitlines()]


def test_export_without_a_model_writes_the_qwen_boxed_messages(tmp_path):
    task = TASKS.get("gsm8k")(None)
    task = task.with_problems(task.problems[:3])
    out = rows(export_prompts(task, tmp_path / "p.jsonl"))
    assert [r["problem_id"] for r in out] == ["gsm8k-0", "gsm8k-1", "gsm8k-2"]
    q = task.problems[0].question
    assert out[0]["messages"] == [{"role": "system", "content": "You are a helpful assistant."},
                                  {"role": "user", "content": q + INSTR}]
    assert "prompt" not in out[0]  # not known without the model's chat template
    assert out[0]["answer"] == "18"


def test_export_with_a_tokenizer_writes_the_exact_rendered_prompt(tmp_path):
    tok = build_tokenizer()
    tok.chat_template = QWEN_TEMPLATE
    task = TASKS.get("math500")(None)
    task = task.with_problems(task.problems[:2])
    out = rows(export_prompts(task, tmp_path / "p.jsonl", tok, "qwenlike"))
    q = task.problems[0].question
    assert out[0]["prompt"] == (f"<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
                                f"<|im_start|>user\n{q}{INSTR}<|im_end|>\n<|im_start|>assistant\n")
    assert out[0]["prompt"] == task.render(task.problems[0], tok)  # what our samplers feed the model
    assert out[0]["prompt_model"] == "qwenlike" and len(out[0]["messages"]) == 2
    assert out[0]["meta"]["level"] == 2 and out[0]["meta"]["subject"] == "Precalculus"


def test_task_without_chat_exports_the_plain_prompt(tmp_path):
    task = TASKS.get("aime24")(None)
    task.chat = False
    task = task.with_problems(task.problems[:1])
    out = rows(export_prompts(task, tmp_path / "p.jsonl"))
    assert out[0]["prompt"] == task.problems[0].question + INSTR and "messages" not in out[0]


def test_task_system_override_and_drop():
    from boundlab.tasks import build_task

    def cfg(system):
        return type("C", (), {"name": "gsm8k", "template": None, "chat": None, "system": system,
                              "verifier": None, "limit": 1})()
    assert build_task(cfg(None)).system == "You are a helpful assistant."
    assert build_task(cfg("Be brief.")).messages(build_task(cfg("Be brief.")).problems[0])[0]["content"] == "Be brief."
    dropped = build_task(cfg(""))
    assert dropped.system is None and [m["role"] for m in dropped.messages(dropped.problems[0])] == ["user"]
