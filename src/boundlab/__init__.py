"""BoundLab: does a training method expand an LLM's reasoning boundary, or only sharpen it?"""

__version__ = "0.1.0"
