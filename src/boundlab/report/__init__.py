"""The report: the paper's figures and tables for a base model and the models trained from it,
read from the probe store (`report.py`; see `boundlab.report.build`)."""
