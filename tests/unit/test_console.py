"""The quiet console (issue 38): one line per logging step with significant digits, the libraries'
deprecation noise filtered at the source (and only theirs), and train.log lines appended whole."""

import warnings

import pytest

from boundlab.training import console as C


def test_step_line_has_the_columns_that_say_whether_rl_learns():
    logs = {"loss": -7.451e-09, "grad_norm": 0.4764, "learning_rate": 0.0002, "reward": 0.375,
            "reward_std": 0.5175, "entropy": 0.01006, "frac_reward_zero_std": 0.5, "num_tokens": 1599.0,
            "completions/mean_length": 37.62}
    assert C.step_line(3, 4, logs) == ("step 3/4  reward 0.375  ± 0.517  entropy 0.0101  loss -7.45e-09  "
                                       "lr 0.0002")
    assert C.step_line(4, 4, {"train_runtime": 12.0, "epoch": 1.0}) is None


@pytest.mark.parametrize("v,s", [(0.04, "0.04"), (0.0412345, "0.0412"), (250.0, "250"), (1.23e-05, "1.23e-05"),
                                 (3, "3"), (float("inf"), "inf"), ("x", "x")])
def test_figures_keep_three_significant_digits(v, s):
    assert C.fmt(v) == s


def test_only_the_libraries_deprecations_are_filtered():
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        C.quiet_libraries()
        warnings.warn_explicit("`gradient_checkpointing` is deprecated", FutureWarning, "x.py", 1,
                               module="transformers.training_args")
        warnings.warn_explicit("old trl api", DeprecationWarning, "y.py", 1, module="trl.trainer.utils")
        warnings.warn_explicit("ours", FutureWarning, "z.py", 1, module="boundlab.probe.runner")
        warnings.warn_explicit("a real problem", UserWarning, "w.py", 1, module="transformers.modeling_utils")
    assert [str(w.message) for w in seen] == ["ours", "a real problem"]


class _Bar:
    def __init__(self):
        self.lines = []

    def write(self, s):
        self.lines.append(s)


class _State:
    is_world_process_zero, global_step, max_steps = True, 5, 150


def test_the_progress_callback_prints_one_short_line():
    cb = C.CondensedProgress()
    cb.training_bar = _Bar()
    cb.on_log(None, _State(), None, logs={"reward": 0.5, "reward_std": 0.25, "kl": 0.00102, "epoch": 0.1})
    assert cb.training_bar.lines == ["step 5/150  reward 0.5  ± 0.25  kl 0.00102"]


def test_train_log_lines_are_appended_whole(tmp_path):
    (tmp_path / "train.log").write_text("[2026-12-06][hydra] start\n")
    C.to_train_log(tmp_path, ["\x1b[31mred\x1b[0m", "b"])
    C.to_train_log(tmp_path, "c")
    assert (tmp_path / "train.log").read_text() == "[2026-12-06][hydra] start\nred\nb\nc\n"


def test_a_lost_keyboard_interrupt_is_raised_again_at_the_next_step():
    # A KeyboardInterrupt raised inside __del__ is printed and dropped by Python; the guard's flag
    # makes the trainer callback raise it again, so Ctrl-C always stops training.
    import os
    import signal

    from boundlab.training.interrupt import InterruptGuard

    guard = InterruptGuard()
    cb = guard.callback()

    class Dropper:
        def __del__(self):
            os.kill(os.getpid(), signal.SIGINT)  # the handler raises here, inside __del__: lost

    with guard:
        d = Dropper()
        del d
        assert guard.requested
        with pytest.raises(KeyboardInterrupt):
            cb.on_step_end(None, None, None)
    assert signal.getsignal(signal.SIGINT) is not guard._handler  # the previous handler is back
