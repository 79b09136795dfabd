"""BoundLab's figures, drawn on Matplotlib's Agg canvas, never pyplot (no global state, safe in a
training process and its probe threads): `style` (palette, markers, the log2-k axis, saving),
`curves` (pass@k against k), `boundary` (the boundary over training, its panels per tier, the entropy
view). The report's own figures are `boundlab.report.plots` and `boundlab.report.grid`; they use the
same style.
"""
